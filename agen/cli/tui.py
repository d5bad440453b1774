"""``agen tui``: the terminal UI, attached to the local `agen up` or to --hub."""

from __future__ import annotations

import typer

from agen.cli._common import HubOpt, TokenOpt


def tui(hub: HubOpt = None, token: TokenOpt = None) -> None:
    """The terminal UI: fleet, tasks, approvals, transcripts, traces, events and logs, live."""
    from agen.client import Client
    from agen.tui.app import AgenApp

    client = Client.from_options(hub, token)
    AgenApp(client).run()


def register(app: typer.Typer) -> None:
    app.command("tui")(tui)
