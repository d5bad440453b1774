"""``agen tui``: the terminal UI, attached to the local `agen up` or to --hub; ``agen ui``: the same in a browser."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agen.cli._common import HubOpt, TokenOpt

if TYPE_CHECKING:
    from agen.client import Client

UI_LISTEN = "127.0.0.1:7080"


def tui(hub: HubOpt = None, token: TokenOpt = None) -> None:
    """The terminal UI: fleet, tasks, approvals, transcripts, traces, events and logs, live."""
    from agen.client import Client
    from agen.tui.app import AgenApp

    client = Client.from_options(hub, token)
    AgenApp(client, find_hub=None if hub else moved_local_hub).run()


def moved_local_hub(current: Client) -> Client | None:
    """A client for the local `agen up` when local.json now names another URL or token than
    ``current`` uses (a Hub started later, on another port); else None."""
    from agen.client import Client, HttpTransport
    from agen.errors import AgenError
    from agen.local import read_local, same_hub

    try:
        local = read_local()
    except AgenError:
        return None
    transport = current.transport
    if local is None or not isinstance(transport, HttpTransport):
        return None
    if same_hub(local.url, transport.url) and local.token == transport.token:
        return None
    return Client.http(local.url, local.token)


def ui(
    hub: HubOpt = None,
    token: TokenOpt = None,
    listen: Annotated[
        str, typer.Option("--listen", help="host:port to serve on (loopback only).")
    ] = UI_LISTEN,
) -> None:
    """The TUI in a browser: prints a one-time sign-in link, serves until Ctrl-C.

    Each browser tab runs `agen tui` against the Hub with this command's token; the link signs in one
    browser once (a session cookie), and nothing is served without it.
    """
    from agen import extras

    extras.require("ui", "agen ui")

    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.client import HttpTransport
    from agen.tui.serve import serve_ui
    from agen.up import check_port_free, parse_listen
    from agen.wire.common import Empty

    host, port = parse_listen(
        listen,
        remote="put a TLS-terminating proxy in front of it and set AGEN_INSECURE=1 "
        "(`agen ui` serves plain HTTP only)",
    )
    check_port_free(host, port, listen)

    async def check(client: Client) -> tuple[str, str | None]:
        await client.call(r.WhoAmI, Empty())  # an unreachable Hub or a refused token stops here
        transport = client.transport
        assert isinstance(transport, HttpTransport)
        return transport.url, transport.token

    url, hub_token = with_client(hub, token, check)
    serve_ui(url, hub_token, host, port)


def register(app: typer.Typer) -> None:
    app.command("tui")(tui)
    app.command("ui")(ui)
