"""``agen <command>`` builds the parsers of that command alone, and users see the same help, errors
and results as from the whole command tree (building all of it cost a one-shot run more than its task)."""

from __future__ import annotations

import contextlib
import io

import pytest

from agen.cli import LISTING, _only, command


def _top_level() -> list[str]:
    return sorted(command().commands)


def _output(cmd: object, args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cmd.main(args=args, prog_name="agen", standalone_mode=False)  # type: ignore[attr-defined]
    return out.getvalue()


@pytest.mark.parametrize("name", _top_level())
def test_a_commands_help_is_the_same_from_its_own_tree_as_from_the_whole_tree(name: str) -> None:
    whole, own = command(), command(name)
    assert list(own.commands) == [name]
    paths = [[name]] + [[name, sub] for sub in getattr(whole.commands[name], "commands", {})]
    for path in paths:
        text = _output(whole, [*path, "--help"])
        assert text.startswith(f"Usage: agen {' '.join(path)}")
        assert _output(own, [*path, "--help"]) == text


def test_a_command_line_naming_a_command_gets_that_commands_tree_alone() -> None:
    assert _only(["run", "bundles/hello", "hi"]) == "run"
    assert _only(["memory", "ls"]) == "memory"
    assert list(command(_only(["ps"])).commands) == ["ps"]


@pytest.mark.parametrize(
    "args",
    [["-h", "run"], ["--version"], ["rnu", "x"]],
    ids=["root help before a command", "version flag", "typo"],
)
def test_root_options_and_typos_get_the_whole_tree(args: list[str]) -> None:
    """A typo's error suggests the command meant; a root option runs against the real tree."""
    assert _only(args) is None


@pytest.mark.parametrize("args", [[], ["--help"], ["-h"]], ids=["nothing", "--help", "-h"])
def test_the_root_help_from_the_listing_is_the_whole_trees_help(args: list[str]) -> None:
    """`agen --help` lists every command from its name and help text alone (no command's parameters
    built), and prints exactly what the whole tree prints."""
    assert _only(args) == LISTING
    listing = command(LISTING)
    assert sorted(listing.commands) == _top_level()
    assert all(not c.params for c in listing.commands.values() if not hasattr(c, "commands"))
    shown = args or ["--help"]  # no arguments prints the same help (and exits 2)
    text = _output(command(), shown)
    assert text.startswith("Usage: agen")
    assert _output(listing, shown) == text


def test_shell_completion_gets_the_whole_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_AGEN_COMPLETE", "complete_bash")
    assert _only(["run"]) is None
