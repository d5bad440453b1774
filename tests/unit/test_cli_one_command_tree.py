"""``agen <command>`` builds the parsers of that command alone, and users see the same help, errors
and results as from the whole command tree (building all of it cost a one-shot run more than its task)."""

from __future__ import annotations

import contextlib
import io

import pytest

from agen.cli import _only, command


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
    [[], ["--help"], ["-h", "run"], ["--version"], ["rnu", "x"]],
    ids=["nothing", "root help", "root help before a command", "version flag", "typo"],
)
def test_root_options_and_typos_get_the_whole_tree(args: list[str]) -> None:
    """The root's help lists every command, and a typo's error suggests the command meant."""
    assert _only(args) is None


def test_shell_completion_gets_the_whole_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_AGEN_COMPLETE", "complete_bash")
    assert _only(["run"]) is None
