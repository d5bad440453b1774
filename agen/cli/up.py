"""``agen up`` (Hub + local Nest in one process) and ``agen down`` (drain and stop it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agen.cli._common import JsonOpt, err, print_json

if TYPE_CHECKING:
    from agen.client import Client


def up(
    listen: Annotated[
        str,
        typer.Option(
            "--listen", help="Hub listen address (loopback only; port 0: any free port, printed)."
        ),
    ] = "127.0.0.1:7070",
    capacity: Annotated[
        int, typer.Option("--capacity", help="Local nest capacity (0 = unlimited).")
    ] = 8,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Store URL: a SQLite path, sqlite:PATH or postgresql://… "
            "(default: AGEN_STORE, else AGEN_HOME's store).",
            show_default=False,
        ),
    ] = None,
    retention: Annotated[
        str,
        typer.Option(
            "--retention",
            help="Delete spans, log lines, trigger events and replay cassettes older than this "
            "(0 keeps them).",
        ),
    ] = "720h",
    headless: Annotated[
        bool, typer.Option("--headless", help="Run without the terminal UI.")
    ] = False,
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="Instance backend: inproc (asyncio workers in this process) or process (one child "
            "`agen host serve` per instance, stopped with this process).",
        ),
    ] = "inproc",
    host_memory_limit: Annotated[
        str,
        typer.Option(
            "--host-memory-limit",
            help="With --backend process: cap each host's memory (RLIMIT_AS), e.g. 2G; "
            "0 = no cap. A cap that cannot be applied fails the instance's start.",
        ),
    ] = "0",
    gateway_listen: Annotated[
        str,
        typer.Option(
            "--gateway-listen",
            help="A2A Gateway listen address (loopback only): /a2a/NAMESPACE/DEPLOYMENT; "
            "'off' runs no Gateway.",
        ),
    ] = "127.0.0.1:7071",
    allow_self_approval: Annotated[
        bool,
        typer.Option(
            "--allow-self-approval",
            envvar="AGEN_ALLOW_SELF_APPROVAL",
            help="Let any token approve tool calls of work it submitted itself (the local admin always may).",
        ),
    ] = False,
) -> None:
    """Hub + local Nest in one process (SQLite or Postgres); Ctrl-C or `agen down` drains and stops it."""
    import asyncio
    import sys

    from agen.cli._common import parse_duration_ms
    from agen.errors import InvalidError
    from agen.nest.backends import check_backend
    from agen.nest.process import parse_memory_limit
    from agen.up import UpOptions, parse_listen, serve

    parse_listen(listen, any_port=True)
    gateway = None if gateway_listen == "off" else gateway_listen
    if gateway is not None:
        parse_listen(gateway, flag="--gateway-listen", any_port=True)
    if capacity < 0:
        raise InvalidError(
            f"--capacity {capacity}: must be 0 (unlimited) or more", field="--capacity"
        )
    memory = parse_memory_limit(host_memory_limit)
    check_backend(backend, memory)
    opts = UpOptions(
        listen=listen,
        capacity=capacity,
        store=store,
        retention_ms=parse_duration_ms(retention, flag="--retention"),
        backend=backend,
        host_memory_limit=memory,
        allow_self_approval=allow_self_approval,
        gateway_listen=gateway,
        tui=not headless and sys.stdin.isatty() and sys.stdout.isatty(),
    )
    asyncio.run(serve(opts))


def down(json_out: JsonOpt = False) -> None:
    """Stop a running 'agen up' (drains instances)."""
    import asyncio
    import time

    from agen.api import registry as r
    from agen.client import Client
    from agen.errors import AgenError, UnavailableError
    from agen.local import read_local
    from agen.wire.common import Empty

    local = read_local(strict=True)
    if local is None:
        raise UnavailableError(
            "no local `agen up` found (AGEN_HOME/local.json is missing); nothing to stop"
        )

    async def go() -> None:
        async with Client.http(local.url, local.token) as c:
            busy = await _unfinished(c)
            await c.call(r.Shutdown, Empty())
            err(
                f"agen down: {local.url} is draining"
                + (f" {len(busy)} unfinished run(s):" if busy else " (no run in progress)")
            )
            for line in busy:
                err(f"  {line}")
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                try:
                    await c.call(r.WhoAmI, Empty())
                except UnavailableError:
                    return
                except AgenError:
                    pass
                await asyncio.sleep(0.2)
            raise UnavailableError(
                f"{local.url} is still draining after 10 minutes; it stops when its runs end"
            )

    asyncio.run(go())
    if json_out:
        print_json({"stopped": True, "url": local.url})
    else:
        print("stopped")


async def _unfinished(client: Client) -> list[str]:
    """One line per unfinished run (deployment, task, what it does now): what the drain waits for.
    A Hub that cannot say (an old one, a read error) drains all the same: an empty list."""
    from agen.api import registry as r
    from agen.errors import AgenError
    from agen.wire.observe import GetActivityRequest

    try:
        activity = await client.call(r.GetActivity, GetActivityRequest())
    except AgenError:
        return []
    lines = []
    for run in activity.runs:
        doing = run.doing if not run.detail else f"{run.doing} {run.detail}"
        where = (
            f"{run.namespace}/{run.deployment}" if run.namespace != "default" else run.deployment
        )
        lines.append(f"{where}: task {run.task_id or '-'} ({run.status}, {doing})")
    return lines


def register(app: typer.Typer) -> None:
    app.command("up")(up)
    app.command("down")(down)
