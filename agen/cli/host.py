"""``agen host serve`` (hidden): one instance in a child process, started by its Nest's Manager."""

from __future__ import annotations

import typer

from agen.cli._common import group


def serve() -> None:
    """Serve one instance for the Manager that started this process (settings come from the environment)."""
    import asyncio

    from agen.nest.host import serve as serve_host

    raise typer.Exit(asyncio.run(serve_host()))


def register(app: typer.Typer) -> None:
    host = group(
        name="host",
        help="Instance hosts (started by a Nest; not for direct use).",
        no_args_is_help=True,
    )
    host.command("serve")(serve)
    app.add_typer(host, name="host", hidden=True)
