"""Conventions every command follows: global options, output, errors.

Results go to stdout (a rich table or, with ``--json``, JSON); progress and
diagnostics go to stderr. Heavy modules are imported inside command bodies so
``agen --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

HubOpt = Annotated[
    str | None,
    typer.Option("--hub", envvar="AGEN_HUB", help="Hub URL (default: the local 'agen up').", show_default=False),
]
TokenOpt = Annotated[
    str | None,
    typer.Option("--token", envvar="AGEN_TOKEN", help="API token.", show_default=False),
]
NamespaceOpt = Annotated[str, typer.Option("-n", "--namespace", help="Namespace.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]

EXIT_CODES = {
    0: "ok",
    1: "the work failed (a task or run ended failed, cancelled or expired)",
    2: "usage error or invalid input (bad flag, invalid bundle)",
    3: "Hub or another dependency unreachable",
    4: "not found",
    5: "conflict (state refused the change)",
    6: "not allowed (token, scope, namespace)",
    7: "refused by a budget or admission limit",
    8: "still waiting (for an approval, or --timeout ran out); the task goes on",
    130: "interrupted",
}


def err(message: str) -> None:
    """A diagnostic line on stderr."""
    print(message, file=sys.stderr, flush=True)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def stdout_console() -> Any:
    from rich.console import Console

    console = Console(soft_wrap=False, highlight=False)
    if not console.is_terminal:  # piped to a file or grep: whole ids and values, never "…"
        console = Console(soft_wrap=False, highlight=False, width=1000,
                          file=_RStripLines(sys.stdout))  # type: ignore[arg-type]  # only write/flush are used
    return console


class _RStripLines:
    """A stdout wrapper for wide non-terminal output: no trailing padding on any line."""

    def __init__(self, out: Any) -> None:
        self._out = out

    def write(self, text: str) -> int:
        self._out.write("\n".join(line.rstrip() for line in text.split("\n")))
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def isatty(self) -> bool:
        return False


def parse_duration_ms(text: str, *, flag: str = "duration") -> int:
    """Parse Go-style durations (``90s``, ``1h30m``, ``720h``, ``0``) into milliseconds."""
    from agen._duration import parse_duration_ms as parse
    from agen.errors import InvalidError

    if text.strip() == "":
        return 0
    try:
        return parse(text)
    except ValueError as e:
        raise InvalidError(f"{flag}: {e}", field=flag) from None
