"""The ``agen`` command line: wires command modules; each module does its own work."""

from __future__ import annotations

import functools
import os
import sys
from typing import Annotated, Any

from agen.cli._lean import HttpxWithoutItsCli

# pydantic looks for plugins (entry points: every installed distribution's metadata, ~8 ms) the first
# time a model is built; the agen command has none to load. Programs embedding agen keep theirs.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
if "httpx" not in sys.modules:
    sys.meta_path.insert(0, HttpxWithoutItsCli())

import typer
import typer.core

from agen.cli import (
    a2a,
    approvals,
    deploy,
    doctor,
    evals,
    events,
    feedback,
    fleet,
    host,
    hub,
    init,
    join_token,
    mcp,
    memory,
    migrate,
    nest,
    nests,
    notify,
    observe,
    providers,
    replay,
    secrets,
    store,
    submit,
    tasks,
    token,
    trees,
    triggers,
    tui,
    up,
    version,
)
from agen.cli._common import Group, group


class AgenGroup(typer.core.TyperGroup):
    """The root group: once typer has built the command tree, agen.cli._help names every placeholder
    and adds each command's examples (imported here, so `agen version` never loads it)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        from agen.cli._help import polish

        polish(self)


app = group(
    name="agen",
    cls=AgenGroup,
    help="agen: run and manage LLM agent fleets, locally and durably.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh and fish
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        version.version(False)
        raise typer.Exit()


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print agen's version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
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
    triggers,
    providers,
    events,
    notify,
    observe,
    trees,
    tui,
    host,
    memory,
    feedback,
    evals,
    replay,
    migrate,
    hub,
    nest,
    join_token,
    nests,
    store,
    secrets,
    a2a,
    doctor,
):
    module.register(app)


@functools.cache
def command(only: str | None = None) -> Any:
    """The click command tree, built once per process (building it is most of a call's cost in tests).

    With ``only`` (a top-level command or group name), the root holds that one command: building
    all 60 commands' parameters costs a one-shot ``agen run`` more than its task does. The root's
    own options and the command's help, parsing and errors are the same as in the whole tree.
    """
    import typer.main

    if only is None:
        return typer.main.get_command(app)
    if only == LISTING:
        return typer.main.get_command(_listing())
    one = app.fresh()
    for registered in app.agen_registered:
        if registered.name == only:
            registered.register(one)
    return typer.main.get_command(one)


LISTING = ""
"""``command(LISTING)``: the tree the root's own help needs (``agen``, ``agen --help``): every command
by its name and help text, no command's parameters built (typer evaluates each parameter's type hints,
most of what ``agen --help`` would otherwise cost)."""


def _listing() -> Group:
    def stub(callback: Any) -> Any:
        def listed() -> None:  # never called: a listing only shows help
            raise AssertionError("a command of the help listing was invoked")

        listed.__name__, listed.__doc__ = callback.__name__, callback.__doc__
        return listed

    root = app.fresh()
    for registered in app.agen_registered:
        if registered.group is not None:  # the group's own help, none of its commands
            root.add_typer(registered.group.fresh(), **registered.settings)
        else:
            registered.register(root, stub(registered.function))
    return root


def _only(args: list[str]) -> str | None:
    """The top-level command ``args`` start with when it is one agen has; LISTING for the root's own
    help; None (the whole tree) for
    anything else: a root option first (``agen -h run`` shows the root's help), a typo (whose
    error lists the commands), shell completion."""
    if os.environ.get("_AGEN_COMPLETE"):
        return None
    if args in ([], ["--help"], ["-h"]):
        return LISTING
    word = args[0]
    return word if any(r.name == word for r in app.agen_registered) else None


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning every AgenError into a clear message and exit code.

    Anything else that escapes a command is a bug in agen: the user gets one line saying so and
    where the traceback was written, never the traceback itself (exit 1).
    """
    if argv is None:
        _pause_collection()
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
    json_out = {("version",): False, ("--version",): False, ("version", "--json"): True}.get(
        tuple(args)
    )
    if json_out is None:
        return False
    version.version(json_out)
    return True


STARTUP_PAUSE_S = 2.0
"""How long the process entry point keeps the garbage collector's automatic passes off."""


def _pause_collection() -> None:
    """Start-up builds hundreds of thousands of objects that live as long as the process (modules,
    classes, pydantic schemas) and frees almost none: the collector's passes over them cost a one-shot
    ``agen run`` ~50 ms. They stay off for the first STARTUP_PAUSE_S; then a command still running
    (``agen up``, ``agen tui``) freezes what start-up built and collects as usual from there on."""
    import gc
    import threading

    gc.disable()
    resume = threading.Timer(STARTUP_PAUSE_S, _resume_collection)
    resume.daemon = True
    resume.start()


def _resume_collection() -> None:
    import gc

    gc.freeze()
    gc.enable()


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

    args = sys.argv[1:] if argv is None else argv
    json_out = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    try:
        if json_out:
            _run_for_json(args)
        else:
            command(_only(args))(args=args, prog_name="agen")
    except AgenError as e:
        from agen.cli._common import err

        err(f"error: {_elided(str(e))}")
        if json_out:
            _json_error(e.to_dict())
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        if json_out:
            _json_error({"error": {"code": "interrupted", "message": "interrupted", "details": {}}})
        sys.exit(130)
    except Exception as e:  # the last resort: the listed failure modes are checked where they arise
        from agen.cli._common import err

        where = _write_crash_log(argv)
        first = (str(e).splitlines() or [""])[0][:300]
        message = f"agen: internal error: {type(e).__name__}: {first}; please report it" + (
            f" with {where}" if where else ""
        )
        err(message)
        if json_out:
            _json_error({"error": {"code": "internal", "message": message, "details": {}}})
        sys.exit(1)


def _run_for_json(argv: list[str]) -> None:
    """Run with click's own error handling off, so a usage error (an unknown flag, a missing argument)
    reaches a script as ``{"error": …}`` on stdout too; the message still goes to stderr."""
    try:
        code = command(_only(argv)).main(args=argv, prog_name="agen", standalone_mode=False)
    except typer.Abort:
        raise KeyboardInterrupt from None
    except typer.TyperException as e:  # click's ClickException (typer vendors click)
        show = getattr(e, "show", None)
        if callable(show):
            show()  # usage and the message on stderr, as without --json
        _json_error({"error": {"code": "invalid", "message": e.format_message(), "details": {}}})
        sys.exit(e.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _json_error(body: dict[str, Any]) -> None:
    """The error as docs/troubleshooting.md promises it under --json: one object on stdout."""
    import json

    sys.stdout.write(json.dumps(body, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _elided(message: str) -> str:
    """Messages quote the bad value; a 3000-character one is shown by its two ends, so the line stays readable."""
    import re

    return re.sub(r"\S{160,}", lambda m: f"{m.group()[:100]}…{m.group()[-40:]}", message)


def _write_crash_log(argv: list[str] | None) -> str | None:
    """Append the traceback to AGEN_HOME/logs/cli-errors.log (0600); its path, or None if unwritable."""
    import time
    import traceback

    from agen.util.home import agen_home

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
