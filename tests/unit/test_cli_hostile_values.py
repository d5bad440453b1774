"""Every command, fed hostile flag values, answers with one error line and a documented exit code.

The sweep walks the typer app's own command tree, so a new command or flag is covered without
touching this file. The Hub address points at a closed port: a command whose input is fine then
says "cannot reach the Hub" (exit 3), which is an answer, not a crash. What must never appear is a
traceback, a pydantic dump, or the last-resort "internal error" line (that one is for bugs we do
not know about yet, not for bad input).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main

from agen.cli import app, command
from agen.cli._common import EXIT_CODES
from tests.cli_helpers import run_agen

AGEN = Path(sys.executable).parent / "agen"

# Serve until stopped (stdio MCP servers, the TUI, an instance host): they get explicit cases below.
LONG_RUNNING = {"tui", "host serve", "mcp workspace", "mcp sql", "mcp launch"}
# A required value that is fine, so the hostile value in another slot is what gets checked.
BENIGN = {"scope": "viewer"}
HOSTILE_TEXT = [
    "",
    "-1",
    "99999999999999999999",
    "99999999999999h",
    "1x",
    "http://[::1",
    "\u2603\u202e\U0001d54f",
    "/proc/x",
    "{dir}",
    "{missing}",
    "a" * 3000,
]
HOSTILE_INT = ["0", "-1", "99999999999999999999", "abc", ""]
# A failed task (1) and still-waiting (8) need real work; hostile input must be refused or reach the Hub.
ALLOWED = set(EXIT_CODES) - {1, 8, 130}


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def sandbox(
    tmp_path: Path, agen_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """cwd in tmp, the Hub on a closed port (AGEN_HUB and local.json), and AGEN_HOME's up.lock held,
    so a hostile `agen up` that gets past its checks stops at "already running" instead of serving."""
    url = f"http://127.0.0.1:{_dead_port()}"
    (agen_home / "local.json").write_text(json.dumps({"url": url, "token": "t0k", "pid": None}))
    monkeypatch.setenv("AGEN_HUB", url)
    work = tmp_path / "cwd"
    full = work / "full-dir"
    full.mkdir(parents=True)
    (full / "plugin.json").write_text("[1, 2")
    monkeypatch.chdir(work)
    with open(agen_home / "up.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield {"{dir}": str(full), "{missing}": str(work / "nope" / "missing.json")}


def _walk() -> Iterator[tuple[str, Any]]:
    root = typer.main.get_command(app)

    def walk(cmd: Any, path: list[str]) -> Iterator[tuple[str, Any]]:
        ctx = cmd.context_class(cmd, info_name=path[-1] if path else "agen")
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                yield from walk(cmd.get_command(ctx, name), [*path, name])
        else:
            yield " ".join(path), cmd

    yield from walk(root, [])


def _is_int(param: Any) -> bool:
    ann = param.type_descriptor.annotation
    return ann is int or str(ann) in ("int | None", "typing.Optional[int]")


def _argv(name: str, cmd: Any, skip: Any = None, value: str = "") -> list[str]:
    """``name``'s required arguments and options filled benignly, except ``skip`` (an argument) set to ``value``."""
    argv = name.split()
    for p in cmd.params:
        if p.param_type_name == "argument" and p is skip:
            argv.append(value)
        elif p.param_type_name == "argument" and p.required:
            argv.append("1" if _is_int(p) else "x")
        elif p.param_type_name == "option" and p.required and p is not skip:
            argv += [p.opts[-1], BENIGN.get(p.name or "", "x")]
    return argv


def _cases() -> Iterator[tuple[str, list[str]]]:
    """(id, argv): each command with its required slots filled, then one slot made hostile at a time."""
    for name, cmd in _walk():
        if name in LONG_RUNNING:
            continue
        yield name, _argv(name, cmd)
        for p in cmd.params:
            if p.name == "help" or getattr(p, "is_flag", False):
                continue
            for value in HOSTILE_INT if _is_int(p) else HOSTILE_TEXT:
                if p.param_type_name == "argument":
                    argv = _argv(name, cmd, p, value)
                    if value.startswith("-"):
                        argv.insert(len(name.split()), "--")  # a value, not an option
                else:
                    argv = [*_argv(name, cmd, p), p.opts[-1], value]
                yield f"{name} {p.opts[-1]}={value[:12]!r}", argv


CASES = list(_cases())


def _check(code: int, out: str, err: str, argv: list[str]) -> None:
    shown = f"agen {' '.join(argv)!r}: exit {code}\nstdout: {out[-600:]}\nstderr: {err[-1500:]}"
    assert "Traceback" not in out + err, shown
    assert "internal error" not in err, shown
    assert "errors.pydantic.dev" not in out + err, shown
    assert code in ALLOWED, shown
    if (
        code != 0
    ):  # agen's "error: ..." or click's usage error ("Error: ...", boxed when rich is on)
        lines = [
            ln
            for ln in err.splitlines()
            if ln.startswith(("error:", "Error:")) or "─ Error ─" in ln
        ]
        assert lines, shown
        assert all(len(ln) < 600 for ln in lines), (
            shown
        )  # the bad value is quoted, not pasted whole


def test_the_sweep_covers_every_command_and_flag() -> None:
    names = {name for name, _ in _walk()}
    assert {
        "tasks",
        "runs",
        "events",
        "logs",
        "query",
        "trace",
        "transcript",
        "init",
        "up",
        "token create",
        "notify set",
        "run",
        "wait",
        "cancel",
    } <= names
    assert len(CASES) > 400


def test_no_command_prints_a_traceback_for_hostile_values(
    sandbox: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    failures: list[str] = []
    for _, argv in CASES:
        argv = [sandbox.get(a, a) for a in argv]
        code, out, err = run_agen(capsys, *argv)
        try:
            _check(code, out, err, argv)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} of {len(CASES)} cases failed:\n\n" + "\n\n".join(
        failures[:15]
    )


# The ones users hit, each with the exit code and the words that tell them what to do.
REPORTED = [
    (["tasks", "--limit", "0"], 2, "--limit 0: must be from 1 to 1000"),
    (["tasks", "--limit", "99999999999999999999"], 2, "must be from 1 to 1000"),
    (["tasks", "--limit", "2000"], 2, "--limit 2000: must be from 1 to 1000"),
    (["runs", "--limit", "2000"], 2, "--limit 2000: must be from 1 to 1000"),
    (["events", "--after", "-5"], 2, "--after -5: must be 0 or more"),
    (["logs", "X", "--limit", "-1"], 2, "--limit -1: must be from 1 to 10000"),
    (["query", ""], 2, "must not be empty"),
    (["transcript", ""], 2, "must not be empty"),
    (["trace", ""], 2, "must not be empty"),
    (["logs", ""], 2, "must not be empty"),
    (["init", "/proc/x"], 2, "cannot write the bundle to /proc/x"),
    (["up", "--listen", "127.0.0.1:99999"], 2, "port 99999 is out of range; use 0 to 65535"),
    (["ps", "--hub", "http://[::1"], 2, "--hub 'http://[::1' is not a valid URL"),
    (["ps", "--hub", "ftp://example.com"], 2, "is not an http(s) URL"),
    (["ps", "--token", "to ken\u2603"], 2, "--token"),
    (
        ["token", "create", "--scope", "viewer", "--ttl", "99999999999999h"],
        2,
        "the longest duration is 2562047h",
    ),
    (["tui", "--hub", "http://[::1"], 2, "is not a valid URL"),
    (["mcp", "workspace", "--root", "/proc/x"], 2, "--root /proc/x is not a directory"),
    (["mcp", "workspace", "--root", ".", "--run-timeout", "1x"], 2, "--run-timeout"),
    (["mcp", "sql", "--dsn-env", ""], 2, ""),
]


@pytest.mark.parametrize(
    ("argv", "code", "words"), REPORTED, ids=[" ".join(a)[:40] for a, _, _ in REPORTED]
)
def test_reported_crashes_are_one_line_errors(
    sandbox: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
    words: str,
) -> None:
    got, out, err = run_agen(capsys, *argv)
    _check(got, out, err, argv)
    assert got == code, err
    assert words in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1, err


@pytest.mark.parametrize(
    "content",
    ["garbage{", "", "[1, 2]", '{"url": 7}', None],
    ids=["garbage", "empty", "a-list", "wrong-types", "a-folder"],
)
def test_a_corrupt_local_json_names_the_file_and_the_fix(
    agen_home: Path, capsys: pytest.CaptureFixture[str], content: str | None
) -> None:
    path = agen_home / "local.json"
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)
    for argv in (["ps"], ["tasks"], ["down"], ["providers"]):
        code, _, err = run_agen(capsys, *argv)
        assert code == 2, (argv, err)
        assert str(path) in err and "delete it (agen up rewrites it) or fix it" in err, (argv, err)


def test_an_unexpected_exception_is_one_line_and_a_private_log_without_the_token(
    agen_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(token: str = typer.Option("", "--token")) -> None:
        raise RuntimeError("the frobnicator broke\nsecond line")

    app.command("boom-for-test", hidden=True)(boom)
    command.cache_clear()
    try:
        code, _, err = run_agen(capsys, "boom-for-test", "--token", "s3cret-token")
    finally:
        app.registered_commands.pop()
        app.agen_registered.pop()  # what agen.cli's Group remembers of it, for the one-command tree
        command.cache_clear()
    log = agen_home / "logs" / "cli-errors.log"
    assert code == 1
    assert err.strip() == (
        f"agen: internal error: RuntimeError: the frobnicator broke; please report it with {log}"
    )
    text = log.read_text()
    assert (
        "Traceback" in text
        and "the frobnicator broke" in text
        and "boom-for-test --token ***" in text
    )
    assert "s3cret-token" not in text
    assert os.stat(log).st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["tasks", "--limit", "0"], 2),
        (["ps", "--hub", "http://[::1"], 2),
        (["init", "/proc/x"], 2),
        (["events", "--after", "-5"], 2),
        (["tasks"], 3),
    ],
)
def test_the_installed_entry_point_exits_with_one_line(
    sandbox: dict[str, str], argv: list[str], code: int
) -> None:
    proc = subprocess.run(
        [str(AGEN), *argv], capture_output=True, text=True, timeout=60, env=os.environ.copy()
    )
    _check(proc.returncode, proc.stdout, proc.stderr, argv)
    assert proc.returncode == code, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
