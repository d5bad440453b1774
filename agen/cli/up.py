"""``agen up`` (Hub + local Nest in one process) and ``agen down`` (drain and stop it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agen.cli._common import JsonOpt, err, print_json

if TYPE_CHECKING:
    from agen.client import Client
    from agen.local import LocalConfig
    from agen.wire.observe import RunActivity


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
        str | None,
        typer.Option(
            "--gateway-listen",
            help="A2A Gateway listen address (loopback only): /a2a/NAMESPACE/DEPLOYMENT; "
            "'off' runs no Gateway. Default: 127.0.0.1:7071 when the a2a extra is installed, "
            "else no Gateway.",
            show_default=False,
        ),
    ] = None,
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
    from agen.up import UpOptions, gateway_listen_of, parse_listen, serve

    parse_listen(listen, any_port=True)
    gateway = gateway_listen_of(gateway_listen, "agen up")
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
    code = asyncio.run(serve(opts))
    if code:  # the TUI failed on the way (serve said so on stderr)
        raise typer.Exit(code)


def down(
    timeout: Annotated[
        str | None,
        typer.Option(
            "--timeout",
            help="Wait this long (e.g. 30s, 2m) for the running tasks' current steps; then cancel "
            "them gracefully (a last turn to call finish, 20 s) and stop.",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Stop at once, as a second Ctrl-C does: the current steps are cut and each task "
            "resumes from its last checkpoint on the next start (no side effect is repeated).",
        ),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Stop a running 'agen up' (drains instances)."""
    import asyncio

    from agen.cli._common import parse_duration_ms
    from agen.errors import InvalidError, UnavailableError
    from agen.local import read_local

    if timeout is not None and force:
        raise InvalidError("--timeout and --force: pick one", field="--force")
    timeout_s = None if timeout is None else parse_duration_ms(timeout, flag="--timeout") / 1000
    local = read_local(strict=True)
    if local is None:
        raise UnavailableError(
            "no local `agen up` found (AGEN_HOME/local.json is missing); nothing to stop"
        )
    asyncio.run(_force(local) if force else _drain(local, timeout_s))
    if json_out:
        print_json({"stopped": True, "url": local.url, "forced": force})
    else:
        print("stopped")


PROGRESS_EVERY_S = 5.0
"""How often `agen down` says what the drain still waits for."""


async def _drain(local: LocalConfig, timeout_s: float | None) -> None:
    """Ask the Hub to drain, say every few seconds what it waits for, and return once it stopped;
    past ``timeout_s``, cancel what still runs gracefully (once)."""
    import asyncio
    import time

    from agen.api import registry as r
    from agen.client import Client
    from agen.errors import UnavailableError
    from agen.wire.common import Empty

    async with Client.http(local.url, local.token) as c:
        busy = await _unfinished(c)
        await c.call(r.Shutdown, Empty())
        err(
            f"agen down: {local.url} is draining"
            + (f" {len(busy)} unfinished run(s):" if busy else " (no run in progress)")
        )
        for run in busy:
            err(f"  {_describe(run)}")
        start = time.monotonic()
        said = start
        cancelled = False
        while time.monotonic() - start < 600:
            try:
                left = await _running(c)
            except UnavailableError:
                return
            now = time.monotonic()
            if timeout_s is not None and not cancelled and now - start >= timeout_s and left:
                await _cancel_gracefully(c, left)
                cancelled = True
            elif left and now - said >= PROGRESS_EVERY_S:
                longest = min(left, key=lambda run: run.since_ms)
                err(
                    f"agen down: {len(left)} run(s) still finishing their current step; the "
                    f"longest: {_describe(longest)} (`agen down --force` stops at once)"
                )
                said = now
            await asyncio.sleep(0.2)
        raise UnavailableError(
            f"{local.url} is still draining after 10 minutes; it stops when its runs end "
            "(`agen down --force` stops it at once)"
        )


async def _cancel_gracefully(client: Client, runs: list[RunActivity]) -> None:
    from agen.api import registry as r
    from agen.errors import AgenError
    from agen.wire.tasks import CancelTaskRequest

    err(f"agen down: --timeout reached; cancelling {len(runs)} run(s) gracefully (a last turn)")
    for run in runs:
        if run.task_id is None:
            continue
        try:
            await client.call(
                r.CancelTask,
                CancelTaskRequest(id=run.task_id, mode="graceful", reason="agen down --timeout"),
            )
        except AgenError as e:  # it ended meanwhile, or the Hub stopped: nothing left to cancel
            err(f"  task {run.task_id}: {e}")


async def _force(local: LocalConfig) -> None:
    """The second-signal path of `agen up` (it exits at once; runs resume from their checkpoints):
    a first SIGTERM starts the drain, a second one, once the drain is seen, ends the process."""
    import asyncio
    import os
    import signal
    import time

    from agen.client import Client
    from agen.errors import UnavailableError

    if local.pid is None:
        raise UnavailableError(
            f"{local.url}: local.json names no process id; stop it with Ctrl-C where it runs"
        )
    async with Client.http(local.url, local.token) as c:
        busy = await _unfinished(c)
    try:
        os.kill(local.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while not await _draining(local.url) and time.monotonic() < deadline:  # noqa: ASYNC110 - another process
            await asyncio.sleep(0.05)
        os.kill(local.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    err(
        f"agen down: {local.url} stopped at once (--force)"
        + (
            f"; {len(busy)} run(s) resume from their last checkpoint on the next start"
            if busy
            else ""
        )
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not _alive(local.pid):
            return
        await asyncio.sleep(0.05)
    raise UnavailableError(f"agen up (pid {local.pid}) did not exit after two SIGTERMs")


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs: an exited process its parent has not reaped yet (a zombie) has
    stopped too."""
    import os
    from pathlib import Path

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (macOS): the signal check is all there is
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


async def _draining(url: str) -> bool:
    import httpx

    try:
        async with httpx.AsyncClient(verify=False) as http:
            health = (await http.get(url + "/health", timeout=2)).json()
    except (httpx.HTTPError, ValueError):
        return False
    return bool(health.get("shutting_down"))


def _describe(run: RunActivity) -> str:
    doing = run.doing if not run.detail else f"{run.doing} {run.detail}"
    where = f"{run.namespace}/{run.deployment}" if run.namespace != "default" else run.deployment
    return f"{where}: task {run.task_id or '-'} ({run.status}, {doing})"


async def _unfinished(client: Client) -> list[RunActivity]:
    """Every unfinished run: what the drain waits for, or holds (a wait for an approval or a child
    holds no slot). A Hub that cannot say (an old one, a read error) drains all the same: none."""
    from agen.api import registry as r
    from agen.errors import AgenError
    from agen.wire.observe import GetActivityRequest

    try:
        activity = await client.call(r.GetActivity, GetActivityRequest())
    except AgenError:
        return []
    return list(activity.runs)


async def _running(client: Client) -> list[RunActivity]:
    """The runs the drain waits for: those in a model or tool call. UnavailableError once stopped."""
    from agen.api import registry as r
    from agen.errors import AgenError, UnavailableError
    from agen.wire.observe import GetActivityRequest

    try:
        activity = await client.call(r.GetActivity, GetActivityRequest())
    except UnavailableError:
        raise
    except AgenError:
        return []
    return [run for run in activity.runs if run.doing in ("model", "tool")]


def register(app: typer.Typer) -> None:
    app.command("up")(up)
    app.command("down")(down)
