"""Every command's help reads like gh's: an Examples section, named placeholders, `agen --version`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agen.cli import command
from tests.cli_helpers import run_agen


def _commands() -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []

    def walk(cmd: object, path: tuple[str, ...]) -> None:
        out.append(path)
        for name, sub in getattr(cmd, "commands", {}).items():
            if not sub.hidden:
                walk(sub, (*path, name))

    walk(command(), ())
    return out


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "agen")
def test_every_commands_help_has_examples_and_names_its_placeholders(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_agen(capsys, *path, "--help")
    assert code == 0
    examples = out.split("Examples:", 1)
    assert len(examples) == 2, f"agen {' '.join(path)} --help has no Examples section"
    assert re.search(r"^\s+agen\b", examples[1], re.M)  # at least one line to type
    assert not re.search(r"<[a-z][a-z \[\]]*>", out), out  # typer's <str>, <int>, <list[str]>
    assert not re.search(r"\{[a-z_]+\}", out), out  # typer's {name} for a required argument


def test_version_flag_prints_what_the_version_command_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_agen(capsys, "--version")
    assert code == 0 and out.startswith("agen ") and out == run_agen(capsys, "version")[1]


def test_completion_scripts_exist_for_bash_zsh_and_fish() -> None:
    for shell, marker in (
        ("bash", "complete -o default"),
        ("zsh", "#compdef agen"),
        ("fish", "complete --command agen"),
    ):
        env = {**os.environ, "_AGEN_COMPLETE": f"source_{shell}"}
        out = subprocess.run(
            [sys.executable, "-m", "agen"], env=env, capture_output=True, text=True, check=True
        ).stdout
        assert marker in out, shell


def test_install_and_show_completion_are_offered(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_agen(capsys, "--help")
    assert code == 0 and "--install-completion" in out and "--show-completion" in out


def test_agen_help_loads_no_pydantic_rich_or_httpx() -> None:
    probe = (
        "import sys\n"
        "from agen.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pydantic', 'rich', 'httpx') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines()[-1] == "[]"


def _json_commands() -> list[tuple[str, ...]]:
    return [
        path
        for path in _commands()
        if path and "--json" in run_agen_help_options(path)  # every command that offers --json
    ]


def run_agen_help_options(path: tuple[str, ...]) -> set[str]:
    cmd = command()
    for name in path:
        cmd = cmd.commands[name]
    return {opt for p in cmd.params for opt in p.opts}


@pytest.mark.parametrize("path", _json_commands(), ids=" ".join)
def test_every_json_commands_usage_error_is_a_json_error_on_stdout(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_agen(capsys, *path, "--json", "--no-such-flag")
    body = json.loads(out)
    assert code == 2 and body["error"]["code"] == "invalid" and "--no-such-flag" in err


def test_init_model_writes_what_its_help_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, help_text, _ = run_agen(capsys, "init", "--help")
    assert 'x-agen/harness.json ("model")' in " ".join(help_text.split())
    for model, provider in (("anthropic/claude-sonnet-4", "openrouter"), ("gpt-4o-mini", "auto")):
        target = tmp_path / provider
        code, _, err = run_agen(capsys, "init", str(target), "--model", model)
        assert code == 0, err
        harness = json.loads((target / "x-agen" / "harness.json").read_text())
        assert harness["model"] == model and harness["provider"] == provider


def test_agen_version_loads_neither_the_help_polish_nor_the_completion_code() -> None:
    probe = (
        "import sys\n"
        "from agen.cli import main\n"
        "try:\n    main(['version'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('agen.cli._')\n"
        "             and m not in ('agen.cli._common', 'agen.cli._lean')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines()[-1] == "[]"


def test_help_stays_plain_when_typer_was_imported_before_agen() -> None:
    """A program (or a test module) that imports typer first must not switch agen to rich help,
    whose flags read `--json <bool>`."""
    code = "import typer\nfrom agen.cli import main\nmain(['run', '--help'])"
    env = {k: v for k, v in os.environ.items() if k != "TYPER_USE_RICH"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "--json" in done.stdout
    assert "<bool>" not in done.stdout, done.stdout


def _example_commands() -> list[list[str]]:
    """Every `agen …` command in the help examples, as the words a shell passes (pipes, `&&` and
    redirections end a command, `#` starts a comment; quotes and variables as a shell leaves them)."""
    import shlex

    from agen.cli._examples import EXAMPLES

    out: list[list[str]] = []
    for lines in EXAMPLES.values():
        for line in lines:
            lexer = shlex.shlex(line.replace("$", ""), posix=True, punctuation_chars="|&<>")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            words: list[str] = []
            for word in [*lexer, "|"]:  # an operator outside quotes ends a command
                if word and set(word) <= set("|&<>"):
                    if words and words[0] == "agen" and "--version" not in words:
                        out.append(words[1:])  # (--version prints and exits while it parses)
                    words = []
                else:
                    words.append(word)
    return out


@pytest.mark.parametrize("words", _example_commands(), ids=lambda w: " ".join(w)[:60] or "agen")
def test_every_help_example_parses_with_the_options_the_command_has(words: list[str]) -> None:
    """An example names only commands and options that exist, with the arguments they take: click
    parses it (without running it) as it would what a user typed. (Values are checked when the
    command runs, so they are not checked here.)"""
    cmd: Any = command()
    # Each context under the root's, as when agen runs: click keeps the help option a command first
    # builds (its names from the context), and the shared tree must keep the root's ``-h``.
    parent = cmd.make_context("agen", [], resilient_parsing=True)
    args, path = list(words), ["agen"]
    while getattr(cmd, "commands", None) and args:
        if args[0] not in cmd.commands:
            default = getattr(
                cmd, "default_command", None
            )  # `agen eval DIR` is `agen eval run DIR`
            if default is None:
                break
            args.insert(0, default)
        path.append(args[0])
        cmd = cmd.commands[args.pop(0)]
    # a group runs only with a subcommand, or by itself where it says so
    if getattr(cmd, "commands", None):
        assert cmd.invoke_without_command, f"{' '.join(words)}: names no command of {path}"
    cmd.make_context(path[-1], args, parent=parent, resilient_parsing=False)  # raises a UsageError


def test_examples_name_only_scopes_a_token_can_have(capsys: pytest.CaptureFixture[str]) -> None:
    from agen.hub.auth import USER_SCOPES

    for path in (("token",), ("token", "create")):
        _, out, _ = run_agen(capsys, *path, "--help")
        scopes = re.findall(r"--scope (\S+)", out.split("Examples:", 1)[1])
        assert scopes and set(scopes) <= set(USER_SCOPES), (path, scopes)


def test_a_bad_on_behalf_deployment_is_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_agen(
        capsys,
        *("token", "create", "--scope", "operator", "--on-behalf", "--deployment", "Bad Name"),
        *("--hub", "http://127.0.0.1:9", "--token", "x"),  # refused before any connection
    )
    assert code == 2
    assert "--deployment 'Bad Name': must be [NAMESPACE/]NAME" in err


def test_init_says_which_current_model_each_key_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The templates name no model: provider auto runs a current one for whichever key is set."""
    code, _, err = run_agen(capsys, "init", str(tmp_path / "a"), "--template", "assistant")
    assert code == 0, err
    assert (
        "model: picked by provider auto from the key set (ANTHROPIC_API_KEY claude-sonnet-5-5, "
        "OPENAI_API_KEY gpt-5.4-mini, GEMINI_API_KEY gemini-3.5-flash, OPENROUTER_API_KEY "
        "openrouter/auto)"
    ) in " ".join(err.split())
