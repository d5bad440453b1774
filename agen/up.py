"""``agen up``: the Hub (HTTP API on loopback), its leader loop and one local Nest in ONE process.

First start makes an admin token and writes AGEN_HOME/local.json (0600) with the Hub URL and
token; lock files keep a second ``agen up`` off the same home and off the same store file, and
make it wait for one-shot ``agen run``s using the store (agen.ownership). SIGINT/SIGTERM (or ``agen down``)
drains: the API refuses new work with 503, /health says shutting_down, running tasks finish,
leased-but-unstarted ones go back to the queue; a second signal exits at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import ipaddress
import logging
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import uvicorn

from agen.bundle._base import HUB_URL_ENV
from agen.errors import AgenError, ConflictError, InvalidError, UnavailableError
from agen.local import LocalConfig, read_local, write_local
from agen.util.home import agen_home, make_private_dir
from agen.util.listen import EmbeddedServer
from agen.util.logrepeat import log_to_stderr_once_per_repeat

if TYPE_CHECKING:
    from agen.store import Store, Tx

log = logging.getLogger("agen.up")
PRUNE_EVERY_S = 3600


@dataclass
class UpOptions:
    listen: str = "127.0.0.1:7070"
    capacity: int = 8
    store: str | None = None
    retention_ms: int = 720 * 3_600_000
    lease_ms: int = 30_000
    drain_timeout_s: float = 300.0
    backend: str = "inproc"
    host_memory_limit: int = 0
    allow_self_approval: bool = (
        False  # any token may approve its own work (the local admin always may)
    )
    tui: bool = False  # show the terminal UI in this process, attached in-process (not --headless)
    # False: `agen hub serve`, the Hub alone; Nests run elsewhere (`agen nest run`)
    nest: bool = True
    tls: bool = False  # `agen hub serve --tls`: HTTPS with the Hub CA (agen.hub.tls)
    tls_hosts: tuple[str, ...] = ()  # extra names/IPs for the server certificate
    nest_cert_lifetime_ms: int = 30 * 86_400_000  # `--nest-cert-lifetime`: Nest client certificates
    gateway_listen: str | None = None  # the A2A Gateway (agen.gateway); None: no Gateway


GATEWAY_LISTEN = "127.0.0.1:7071"
"""Where the A2A Gateway listens unless --gateway-listen says otherwise (with the a2a extra)."""


def gateway_listen_of(flag: str | None, who: str) -> str | None:
    """The Gateway's listen address from --gateway-listen: None for 'off'; when the flag is not given,
    GATEWAY_LISTEN with the a2a extra installed, else no Gateway (said on stderr: the Hub serves on);
    an address given without the extra is an error naming it."""
    from agen import extras

    if flag == "off":
        return None
    if flag is None:
        if extras.installed("a2a"):
            return GATEWAY_LISTEN
        print(
            f"{who}: no A2A Gateway: {extras.missing('a2a', 'the A2A Gateway')}",
            file=sys.stderr,
            flush=True,
        )
        return None
    extras.require("a2a", f"--gateway-listen {flag}", field="--gateway-listen")
    return flag


def parse_listen(
    listen: str,
    *,
    tls: bool = False,
    flag: str = "--listen",
    any_port: bool = False,
    remote: str = "`agen hub serve --tls` (or set AGEN_INSECURE=1 behind a TLS-terminating proxy)",
) -> tuple[str, int]:
    """``host:port`` checked: loopback unless TLS or AGEN_INSECURE=1. ``any_port``: port 0 lets the
    kernel pick a free port (the server binds it itself and prints the port it got). ``remote`` says
    how this server may listen beyond loopback, for the refusal of such an address."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise InvalidError(f"{flag} {listen!r}: use host:port, e.g. 127.0.0.1:7070", field=flag)
    lowest = 0 if any_port else 1
    if not lowest <= int(port) <= 65535:
        raise InvalidError(
            f"{flag} {listen}: port {int(port)} is out of range; use {lowest} to 65535, "
            "e.g. 127.0.0.1:7070",
            field=flag,
        )
    host = host.strip("[]") or "127.0.0.1"
    loopback = host == "localhost"
    with contextlib.suppress(ValueError):
        loopback = loopback or ipaddress.ip_address(host).is_loopback
    if not loopback and not tls and os.environ.get("AGEN_INSECURE") != "1":
        raise InvalidError(
            f"{flag} {listen}: plain HTTP listens on loopback only; use 127.0.0.1, or {remote}",
            field=flag,
        )
    return host, int(port)


def lock_home(home: Path) -> IO[str]:
    """Hold AGEN_HOME/up.lock for this process's life (with our pid in it); a second ``agen up`` is refused."""
    from agen.ownership import claim

    make_private_dir(home)
    f = open(home / "up.lock", "a+")  # noqa: SIM115 - held open for the process's life
    for _ in range(20):  # an `agen run` probing the lock holds it shared for a moment
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            time.sleep(0.01)
    else:
        f.close()
        local = read_local()
        where = f" at {local.url} (pid {local.pid})" if local else ""
        raise ConflictError(
            f"agen up is already running on {home}{where}; use it, or stop it with `agen down`",
            home=str(home),
        ) from None
    claim(f, home)
    return f


async def _admin_token(store: Any, url: str) -> str:
    """Reuse local.json's token while the store still knows it; else make a new admin token."""
    from agen.hub.auth import hash_token, insert_token, mark_local_admin

    local = read_local()
    if local is not None and await store.scalar(
        "SELECT id FROM tokens WHERE hash = ? AND revoked_ms IS NULL", (hash_token(local.token),)
    ):
        secret = local.token
    else:
        _, secret = await store.write(
            lambda tx: insert_token(tx, scopes=["admin"], name="local-admin", trust="operator")
        )
    await store.write(lambda tx: mark_local_admin(tx, secret))
    return str(secret)


def prune_expired(tx: Tx, retention_ms: int) -> None:
    """Delete what ``--retention`` no longer keeps: finished spans, log lines, trigger events, replay cassettes."""
    cutoff = tx.now_ms - retention_ms
    tx.execute("DELETE FROM spans WHERE ended_ms IS NOT NULL AND ended_ms < ?", (cutoff,))
    tx.execute("DELETE FROM deployment_logs WHERE created_ms < ?", (cutoff,))
    tx.execute("DELETE FROM trigger_events WHERE created_ms < ?", (cutoff,))
    tx.execute("DELETE FROM cassettes WHERE updated_ms < ?", (cutoff,))


async def _prune(store: Store, retention_ms: int, every_s: float = PRUNE_EVERY_S) -> None:
    """Prune hourly for the process's life. A failure is logged when it starts and when it clears, not every
    hour; cancellation (shutdown) passes through."""
    failing = False
    while True:
        try:
            await store.write(lambda tx: prune_expired(tx, retention_ms))
        except Exception as e:
            if not failing:
                log.warning(
                    "retention pruning failed on %s: %s; retrying every %d s",
                    store.url,
                    e,
                    every_s,
                    exc_info=not isinstance(e, AgenError),
                )
            failing = True
        else:
            if failing:
                log.warning("retention pruning on %s works again", store.url)
            failing = False
        await asyncio.sleep(every_s)


async def _tell_draining(node: Any, who: str, every_s: float = 5.0) -> None:
    """While draining, name on stderr the tasks still finishing their current step (tasks waiting for
    an approval or a child hold no slot: there is nothing to wait for)."""
    while True:
        manager = node.manager
        ids = (
            sorted(t for inst in manager.instances.values() for t in inst.running)
            if manager
            else []
        )
        if ids:
            more = f" (+{len(ids) - 10} more)" if len(ids) > 10 else ""
            print(
                f"{who}: waiting for {len(ids)} running task(s) to finish their current step: "
                f"{', '.join(ids[:10])}{more}",
                file=sys.stderr,
                flush=True,
            )
        await asyncio.sleep(every_s)


def _start_tui(hub: Any, url: str) -> tuple[Any, asyncio.Task[None]]:
    """The TUI in this process and loop, on the in-process client; quitting it stops `agen up`, a failure
    of it does not (agen.tui.session: it says so and what to do)."""
    from agen.client import Client
    from agen.tui.app import AgenApp
    from agen.tui.session import TuiSession

    session = TuiSession(
        lambda: AgenApp(Client.in_process(hub), hub_label=url, stops_fleet=True), url
    )
    task = asyncio.create_task(session.run(), name="tui")
    task.add_done_callback(lambda _: hub.request_shutdown())
    return session, task


async def _start_export(store: Any, hub: Any) -> Any:
    """OTLP trace export when AGEN_OTLP_ENDPOINT is set (agen.otel): the SDK is imported only then."""
    from agen.otel.config import OtlpConfig

    config = OtlpConfig.from_env()
    if config is None:
        return None
    from agen.otel.exporter import start_export

    export = await start_export(store, config)
    assert export is not None
    hub.otlp_stats = export.snapshot
    print(f"agen: exporting traces to {config.describe()}", file=sys.stderr, flush=True)
    return export


def check_port_free(host: str, port: int, listen: str) -> None:
    """Say plainly that the address is taken, before uvicorn would print a traceback about it."""
    bind_listen(host, port, listen).close()


def bind_listen(host: str, port: int, listen: str) -> socket.socket:
    """The server's socket, bound here (port 0: the kernel picks one), or a ConflictError that says
    plainly the address is taken, where uvicorn would print a traceback and exit."""
    from agen.util.listen import tcp_listener

    try:
        return tcp_listener(host, port)
    except OSError as e:
        raise ConflictError(
            f"--listen {listen}: the address is in use ({e.strerror}); another agen up with another "
            "AGEN_HOME or another program listens there. Stop it, or pick a free port: "
            f"agen up --listen {host}:{port + 10}",
            field="--listen",
        ) from None


def shared_store_nest_name(home: Path) -> str:
    """The Nest name of an ``agen up`` on a store several Hubs share (Postgres): its own, one per machine
    and home, so it never re-enrols (and so voids the leases of) another Hub's Nest; stable across restarts,
    so a restarted Hub takes back its own Nest and ends that Nest's old leases at once."""
    import hashlib
    import socket

    return f"{socket.gethostname()}-{hashlib.sha256(str(home).encode()).hexdigest()[:8]}"


async def _start_gateway(opts: UpOptions, hub_url: str, hub: Any, who: str) -> Any:
    """The A2A Gateway on --gateway-listen (loopback), calling this Hub over its HTTP API in each
    caller's name; the Hub's call-token keys it reads in process, as this node's own Nest would."""
    from agen.api import registry as r
    from agen.client import Client
    from agen.gateway.server import start_gateway
    from agen.hub.auth import CARD_READER, LOCAL_NEST
    from agen.wire.agents import ResolveAgentRequest, ResolveAgentResponse
    from agen.wire.common import Empty

    async def token_keys() -> list[str]:
        resp = await Client.in_process(hub, LOCAL_NEST).call(r.GetTokenKeys, Empty())
        return [k.public_key for k in resp.keys]

    async def read_card(namespace: str, deployment: str) -> ResolveAgentResponse:
        req = ResolveAgentRequest(namespace=namespace, deployment=deployment)
        return await Client.in_process(hub, CARD_READER).call(r.ResolveAgent, req)

    assert opts.gateway_listen is not None
    host, port = parse_listen(opts.gateway_listen, flag="--gateway-listen", any_port=True)
    try:
        gateway = await start_gateway(
            host,
            port,
            hub_url,
            ca_hash=hub.tls_ca_hash,
            token_keys=token_keys,
            anonymous_card=read_card,
        )
    except ConflictError as e:  # the Hub serves on: A2A is one door of several
        print(f"{who}: no A2A Gateway: {e}", file=sys.stderr, flush=True)
        return None
    hub.gateway_urls = [gateway.url]
    print(
        f"{who}: A2A Gateway at {gateway.url}/a2a/<namespace>/<deployment>",
        file=sys.stderr,
        flush=True,
    )
    return gateway


async def serve(opts: UpOptions) -> int:
    """Serve until drained; the exit status: 0, or 1 when the TUI failed on the way (agen.tui.session)."""
    from agen.api.app import create_app
    from agen.hub.platform_secrets import seal_stored
    from agen.node import HubNode, LocalNode
    from agen.ownership import hold_store_for_up, release
    from agen.store import open_store, store_file
    from agen.store.sqlite import check_writable

    host, port = parse_listen(opts.listen, tls=opts.tls, any_port=True)
    who = "agen up" if opts.nest else "agen hub serve"
    home = agen_home()
    lock = lock_home(home)
    try:
        sock = bind_listen(host, port, opts.listen)
    except BaseException:
        lock.close()
        raise
    port = sock.getsockname()[1]  # --listen HOST:0: the port the kernel picked
    try:
        db = store_file(opts.store)
        # A SQLite file takes one Hub (its lock says which); several Hubs may share a Postgres database,
        # which protects itself (row locks, SKIP LOCKED leasing, the leader lease: docs/postgres.md).
        store_lock = (
            None
            if db is None
            else hold_store_for_up(db, home, lambda msg: print(msg, file=sys.stderr, flush=True))
        )
        if db is not None:  # said in one line now, not at the first write of a half-started Hub
            try:
                check_writable(db)
            except BaseException:
                release(store_lock)
                raise
    except BaseException:
        sock.close()
        lock.close()
        raise
    store = await open_store(opts.store)
    node: LocalNode | HubNode = (
        LocalNode(
            store,
            nest_name="local" if db is not None else shared_store_nest_name(home),
            capacity=opts.capacity,
            lease_ms=opts.lease_ms,
            drain_timeout_s=opts.drain_timeout_s,
            backend=opts.backend,
            host_memory_limit=opts.host_memory_limit,
        )
        if opts.nest
        else HubNode(store)
    )
    hub = node.hub
    await seal_stored(store)  # values stored before AGEN_HUB_KEK was set end up sealed
    scheme = "https" if opts.tls else "http"
    url = f"{scheme}://{host if ':' not in host else f'[{host}]'}:{port}"
    hub.url = url
    os.environ[HUB_URL_ENV] = url  # ${AGEN_HUB_URL} in a bundle's mcp.json (fleet-steward's /mcp)
    ssl_files: dict[str, Any] = {}
    if opts.tls:
        import ssl

        from agen.api.peer_cert import peer_cert_protocol
        from agen.hub.tls import prepare

        tls = await prepare(store, home / "tls", [host, *opts.tls_hosts])
        hub.serve_tls(tls, opts.nest_cert_lifetime_ms)
        # Client certificates are asked for but optional at the TLS layer (API clients use bearer
        # tokens); one that is sent must come from the Hub CA. Nest calls require one (agen.hub.auth).
        ssl_files = {
            "ssl_certfile": str(tls.cert_file),
            "ssl_keyfile": str(tls.key_file),
            "ssl_cert_reqs": ssl.CERT_OPTIONAL,
            "ssl_ca_certs": str(tls.ca_file),
            "http": peer_cert_protocol(),
        }
    hub.allow_self_approval = opts.allow_self_approval
    app = create_app(hub)
    server = EmbeddedServer(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            access_log=False,
            **ssl_files,
        )
    )
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        if signals > 1:
            print(f"{who}: second signal, exiting now", file=sys.stderr, flush=True)
            os._exit(130)
        hub.request_shutdown()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    pruner: asyncio.Task[None] | None = None
    gateway: Any = None
    serving: asyncio.Task[None] | None = None
    export = None
    logged = (
        log_to_stderr_once_per_repeat()
    )  # a fault that fails every loop each second is said once
    try:
        token = await _admin_token(store, url)
        export = await _start_export(store, hub)
        serving = asyncio.create_task(server.serve(sockets=[sock]), name="hub-http")
        while not server.started:
            if serving.done():
                await serving  # raises the bind error
                raise UnavailableError(f"cannot listen on {opts.listen}", listen=opts.listen)
            await asyncio.sleep(0.02)
        write_local(LocalConfig(url=url, token=token, pid=os.getpid(), ca_hash=hub.tls_ca_hash))
        (home / "up.pid").write_text(f"{os.getpid()}\n")
        if opts.retention_ms:
            pruner = asyncio.create_task(_prune(store, opts.retention_ms))
        what = (
            f"capacity {opts.capacity}, backend {opts.backend}"
            if opts.nest
            else "no local Nest: enrol Nests with `agen join-token create` and `agen nest run`"
        )
        print(
            f"{who}: Hub at {url} (store {store.url}, {what}); "
            "Ctrl-C or `agen down` drains and stops",
            file=sys.stderr,
            flush=True,
        )
        if hub.tls_ca_hash:
            print(
                f"agen hub serve: TLS with the Hub CA {hub.tls_ca_hash} (clients pin it with --ca-hash)",
                file=sys.stderr,
                flush=True,
            )
        session, ui = _start_tui(hub, url) if opts.tui else (None, None)
        # The API answers first; instances and their MCP servers (seconds each after a crash) start behind it.
        await node.start()
        # Then the Gateway (a2a-sdk and protobuf take a moment to import): A2A calls are tasks for that node.
        gateway = await _start_gateway(opts, url, hub, who) if opts.gateway_listen else None
        if gateway is not None and isinstance(node, LocalNode):  # its waiting calls: saturation
            node.manager.waiting_calls = gateway.waiting
        await hub.shutdown_requested.wait()
        if session is not None and ui is not None:
            session.stop()
            with contextlib.suppress(Exception):
                await ui
        print(
            f"{who}: draining ({hub.in_flight()} tasks in flight; a second Ctrl-C exits at once)",
            file=sys.stderr,
            flush=True,
        )
        telling = asyncio.create_task(_tell_draining(node, who))
        try:
            await node.drain()
        finally:
            telling.cancel()
        server.should_exit = True
        with contextlib.suppress(Exception):
            await serving
        print(f"{who}: stopped", file=sys.stderr, flush=True)
        if session is not None and session.failed:
            print(
                f"agen up: exit code 1: the TUI failed ({session.failures[-1]}); the traceback is "
                "above, please report it",
                file=sys.stderr,
                flush=True,
            )
            return 1
        return 0
    finally:
        if pruner is not None:
            pruner.cancel()
        if not hub.draining:
            await node.drain(0)
        if serving is None:  # start-up failed before the API served: its socket is still ours
            sock.close()
        if serving is not None and not serving.done():  # start-up failed behind a serving API
            server.should_exit = True
            with contextlib.suppress(Exception):
                await serving
        if gateway is not None:
            await gateway.stop()
        if export is not None:
            await export.stop()
        await app.state.mcp_endpoint.close()
        await store.close()
        with contextlib.suppress(OSError):
            (home / "up.pid").unlink()
        release(store_lock)
        lock.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        logging.getLogger("agen").removeHandler(logged)
