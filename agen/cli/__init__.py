"""The ``agen`` command line: wires command modules; each module does its own work."""

from __future__ import annotations

import os
import sys

# Plain help text: rendering it through rich's markdown machinery doubles `agen --help`'s cold start.
os.environ.setdefault("TYPER_USE_RICH", "0")

import typer

from agen.cli import (
    approvals,
    deploy,
    evals,
    fleet,
    host,
    init,
    mcp,
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


for module in (version, init, up, deploy, fleet, submit, tasks, approvals, token, mcp, signals, observe, tui,
               host, evals):
    module.register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning every AgenError into a clear message and exit code."""
    from agen.errors import AgenError

    try:
        app(args=argv, prog_name="agen")
    except AgenError as e:
        from agen.cli._common import err

        err(f"error: {e}")
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
