"""The ``agen`` command line: wires command modules; each module does its own work."""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

# Plain help text: rendering it through rich's markdown machinery doubles `agen --help`'s cold start.
os.environ.setdefault("TYPER_USE_RICH", "0")

import typer

from agen.cli import (
    approvals,
    deploy,
    evals,
    feedback,
    fleet,
    host,
    init,
    mcp,
    memory,
    migrate,
    observe,
    signals,
    submit,
    tasks,
    token,
    tui,
    up,
    version,
)

app = typer.Typer(
    name="agen",
    help="agen: run and manage LLM agent fleets, locally and durably.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root() -> None:
    """agen: run and manage LLM agent fleets, locally and durably."""


for module in (
    version,
    init,
    up,
    deploy,
    fleet,
    submit,
    tasks,
    approvals,
    token,
    mcp,
    signals,
    observe,
    tui,
    host,
    memory,
    feedback,
    evals,
    migrate,
):
    module.register(app)


@functools.cache
def command() -> Any:
    """The click command tree, built once per process (building it is most of a call's cost in tests)."""
    import typer.main

    return typer.main.get_command(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning every AgenError into a clear message and exit code.

    Anything else that escapes a command is a bug in agen: the user gets one line saying so and
    where the traceback was written, never the traceback itself (exit 1).
    """
    try:
        if not _answered_directly(sys.argv[1:] if argv is None else argv):
            _main(argv)
    finally:
        if (
            argv is None
        ):  # the process entry point (the console script), not a caller in its own process
            _before_exit()


def _answered_directly(args: list[str]) -> bool:
    """``agen version [--json]`` answers before typer builds its parsers: typer validates every option
    through pydantic, and loading pydantic for a version string would double the command's cost."""
    json_out = {("version",): False, ("version", "--json"): True}.get(tuple(args))
    if json_out is None:
        return False
    version.version(json_out)
    return True


def _before_exit() -> None:
    """Flush the output, then freeze the heap: the interpreter's final garbage collection over every
    object the command built costs a one-shot ``agen run`` about 100 ms and frees nothing the OS would not.
    The store and every subprocess are closed by then (each command closes what it opened)."""
    import contextlib
    import gc

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(
            OSError, ValueError
        ):  # a closed pipe or stream: nothing left to flush
            stream.flush()
    gc.freeze()


def _main(argv: list[str] | None) -> None:
    from agen.errors import AgenError

    try:
        command()(args=argv, prog_name="agen")
    except AgenError as e:
        from agen.cli._common import err

        err(f"error: {_elided(str(e))}")
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as e:  # the last resort: the listed failure modes are checked where they arise
        from agen.cli._common import err

        where = _write_crash_log(argv)
        first = (str(e).splitlines() or [""])[0][:300]
        err(
            f"agen: internal error: {type(e).__name__}: {first}; please report it"
            + (f" with {where}" if where else "")
        )
        sys.exit(1)


def _elided(message: str) -> str:
    """Messages quote the bad value; a 3000-character one is shown by its two ends, so the line stays readable."""
    import re

    return re.sub(r"\S{160,}", lambda m: f"{m.group()[:100]}…{m.group()[-40:]}", message)


def _write_crash_log(argv: list[str] | None) -> str | None:
    """Append the traceback to AGEN_HOME/logs/cli-errors.log (0600); its path, or None if unwritable."""
    import time
    import traceback

    from agen._home import agen_home

    path = agen_home() / "logs" / "cli-errors.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(
                f"--- {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} agen "
                f"{' '.join(_redacted(argv if argv is not None else sys.argv[1:]))}\n"
                f"{traceback.format_exc()}\n"
            )
    except OSError:
        return None
    return str(path)


def _redacted(argv: list[str]) -> list[str]:
    """argv with the values of --token and --secret blanked: a crash log must not hold credentials."""
    out: list[str] = []
    hide = False
    for arg in argv:
        flag = arg.split("=", 1)[0]
        if hide:
            out.append("***")
        elif flag in ("--token", "--secret") and "=" in arg:
            out.append(f"{flag}=***")
        else:
            out.append(arg)
        hide = not hide and arg in ("--token", "--secret")
    return out
