"""``agen nest run``: a Nest in its own process, on this machine or another, talking to the Hub only
through the API (the same ClientHubPort the Nest beside an ``agen up`` Hub uses, over HTTP).

First start: the one-time join token enrols the Nest (EnrolNest) and its own credential (scope nest,
bound to this Nest) is saved 0600 in its data folder (default AGEN_HOME/nests/<name>/nest.json); later
starts use that credential. A saved credential the Hub rejects is replaced by a fresh enrolment when a
join token is at hand. Run data (runs, messages, spans) goes straight to the store named by ``--store``,
the one the Hub uses, so running agents keep checkpointing while the Hub is away; the Manager keeps its
last assignments running and reports again when the Hub answers. A revoked credential stops the Nest.

For a Hub outage the data folder also holds (0600) the Hub's call-token keys (token_keys.json, so the
Gateway checks tokens offline after a restart) and the call tokens resolved for its instances
(resolved.json); a Nest started while its Hubs are away waits for one to answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agen._home import agen_home, make_private_dir, write_private
from agen.bundle._base import HUB_URL_ENV
from agen.errors import InvalidError, UnauthenticatedError, UnavailableError

if TYPE_CHECKING:
    from agen.client import Client
    from agen.nest.manager import Manager
    from agen.store import Store

log = logging.getLogger("agen.nest")
CREDENTIAL = "nest.json"
TOKEN_KEYS = "token_keys.json"  # the Hub's public call-token keys (agen.gateway.auth.KeyRing)
RESOLVED = "resolved.json"  # the call tokens resolved for this Nest's instances (NestDelegation)


@dataclass
class NestOptions:
    hub: str
    store: str
    name: str
    join_token: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    capacity: int = 8
    backend: str = "inproc"
    host_memory_limit: int = 0
    data_dir: Path | None = None
    ca_hash: str | None = None  # an https Hub's CA, pinned (agen.client.pinned_context)
    lease_ms: int = 30_000
    heartbeat_s: float = 1.0
    drain_timeout_s: float = 300.0
    more_hubs: tuple[str, ...] = ()  # other Hubs on the same store, tried when one does not answer
    gateway_listen: tuple[str, int] | None = None  # the A2A Gateway's address; None: no Gateway
    gateway_url: str | None = None  # how callers reach it (default: from gateway_listen)

    @property
    def hubs(self) -> tuple[str, ...]:
        return (self.hub, *self.more_hubs)

    @property
    def folder(self) -> Path:
        return self.data_dir or agen_home() / "nests" / self.name


@dataclass(frozen=True)
class Credential:
    hub: str
    nest_id: str
    token: str


class HubLinkOfNest:
    """How this Nest's Gateway reaches the Hub as one caller: the caller's own credential, over the
    Nest's Hubs (the pinned CA, moving on when one stops answering) — the Gateway's HubLink."""

    def __init__(self, opts: NestOptions, credential: Credential) -> None:
        self.opts = opts
        self.credential = credential  # the Nest's own (replaced when it enrols again)

    def client(self, token: str) -> Client:
        return hub_client(self.opts, token)

    async def token_keys(self) -> list[str]:
        """The Hub's public call-token keys, asked with the Nest's credential (GetTokenKeys is a
        Nest-scope RPC): how this Gateway verifies call tokens offline."""
        from agen.nest.client_port import ClientHubPort

        async with hub_client(self.opts, self.credential.token) as client:
            return await ClientHubPort(client).token_keys()

    @property
    def keys_file(self) -> Path:
        """Where the Gateway keeps those keys, so it verifies after a restart while the Hub is away."""
        return self.opts.folder / TOKEN_KEYS


class RunningGateway(Protocol):
    url: str

    def waiting(self) -> Mapping[tuple[str, str], int]:
        """Calls waiting for a free instance, by (namespace, deployment)."""

    async def stop(self) -> None: ...


GatewayStarter = Callable[[HubLinkOfNest], Awaitable["RunningGateway | None"]]
"""Starts this Nest's Gateway (``agen nest run --gateway-listen``); None when it cannot listen. Given
by the CLI: the Nest and the Gateway are sibling layers that do not import each other."""


def read_credential(folder: Path, hub: str | tuple[str, ...]) -> Credential | None:
    """This Nest's saved credential for ``hub`` (or any of several Hubs on one store), or None (none
    yet, or one for another Hub)."""
    path = folder / CREDENTIAL
    try:
        data = json.loads(path.read_text())
        cred = Credential(hub=data["hub"], nest_id=data["nest_id"], token=data["token"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InvalidError(
            f"{path}: not a Nest credential ({e}); delete it and start again with --join-token",
            file=str(path),
        ) from None
    hubs = (hub,) if isinstance(hub, str) else hub
    return cred if cred.hub.rstrip("/") in {h.rstrip("/") for h in hubs} else None


def hub_client(opts: NestOptions, token: str) -> Client:
    """A client of this Nest's Hubs: the first that answers, moving on when one stops answering."""
    from agen.client import Client, HttpTransport
    from agen.nest.hubs import FailoverTransport

    if not opts.more_hubs:
        return Client.http(opts.hub, token, ca_hash=opts.ca_hash)
    return Client(
        FailoverTransport(
            list(opts.hubs), lambda url: HttpTransport(url, token, ca_hash=opts.ca_hash)
        )
    )


async def enrol(opts: NestOptions) -> Credential:
    from agen.api import registry as r
    from agen.wire.nests import EnrolNestRequest

    if not opts.join_token:
        raise InvalidError(
            f"nest {opts.name} is not enrolled with {opts.hub} yet: pass --join-token (make one on the "
            "Hub's machine with `agen join-token create`)",
            field="--join-token",
        )
    async with hub_client(opts, opts.join_token) as client:
        resp = await client.call(
            r.EnrolNest,
            EnrolNestRequest(name=opts.name, capacity=opts.capacity, labels=opts.labels),
        )
    cred = Credential(hub=opts.hub, nest_id=resp.nest_id, token=resp.token)
    make_private_dir(opts.folder)
    write_private(
        opts.folder / CREDENTIAL,
        json.dumps({"hub": cred.hub, "nest_id": cred.nest_id, "token": cred.token}) + "\n",
    )
    print(
        f"agen nest: enrolled as nest {opts.name} ({cred.nest_id}); credential saved in "
        f"{opts.folder / CREDENTIAL}",
        file=sys.stderr,
        flush=True,
    )
    return cred


async def _manager(
    opts: NestOptions,
    cred: Credential,
    store: Store,
    gateway: RunningGateway | None,
    stop: asyncio.Event,
) -> Manager | None:
    from agen.nest.backends import backend_factory
    from agen.nest.client_port import ClientHubPort
    from agen.nest.delegation import NestDelegation
    from agen.nest.manager import Manager

    port = ClientHubPort(hub_client(opts, cred.token))
    manager = Manager(
        port,
        executor_factory=backend_factory(
            store,
            opts.backend,
            opts.host_memory_limit,
            progress=port.report_progress,
            delegation=NestDelegation(port.client, saved=opts.folder / RESOLVED),
        ),
        name=opts.name,
        capacity=opts.capacity,
        labels=opts.labels,
        lease_ms=opts.lease_ms,
        heartbeat_s=opts.heartbeat_s,
        drain_timeout_s=opts.drain_timeout_s,
        gateway_url=gateway.url if gateway is not None else None,
        waiting_calls=gateway.waiting if gateway is not None else None,
    )
    return manager if await _start_when_the_hub_answers(manager, opts, stop) else None


async def _start_when_the_hub_answers(
    manager: Manager, opts: NestOptions, stop: asyncio.Event
) -> bool:
    """Register with the Hub; a Nest restarted while its Hubs are away waits for one to answer
    (its Gateway meanwhile checks call tokens with the keys it saved) instead of exiting. False:
    stopped (SIGINT/SIGTERM) before any Hub answered."""
    delay_s, said = 1.0, False
    while True:
        try:
            await manager.start()
            if said:
                print("agen nest: the Hub answers again", file=sys.stderr, flush=True)
            return True
        except UnavailableError as e:
            if not said:
                print(f"agen nest: {e}; waiting for it", file=sys.stderr, flush=True)
                said = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay_s)
            return False
        delay_s = min(delay_s * 2, 30.0)


async def run_nest(opts: NestOptions, start_gateway: GatewayStarter | None = None) -> None:
    """Enrol if needed, then run the Manager (and the Gateway, when ``start_gateway`` is given)
    until SIGINT/SIGTERM (drain) or a revoked credential."""
    from agen.store import open_store

    cred = read_credential(opts.folder, opts.hubs)
    os.environ[HUB_URL_ENV] = opts.hub  # ${AGEN_HUB_URL} in a bundle's mcp.json: the first Hub
    store = await open_store(opts.store)
    gateway: RunningGateway | None = None
    try:
        if cred is None:
            cred = await enrol(opts)
        link = HubLinkOfNest(opts, cred)
        if start_gateway is not None:
            gateway = await start_gateway(link)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            manager = await _manager(opts, cred, store, gateway, stop)
        except UnauthenticatedError:
            if not opts.join_token:
                raise
            log.warning("nest %s: the saved credential was refused; enrolling again", opts.name)
            cred = link.credential = await enrol(opts)
            manager = await _manager(opts, cred, store, gateway, stop)
        if manager is None:
            print("agen nest: stopped", file=sys.stderr, flush=True)
            return
        print(
            f"agen nest: nest {opts.name} ({manager.nest_id}) runs up to {opts.capacity or 'any'} "
            f"instances for {', '.join(opts.hubs)} (store {store.url}, backend {opts.backend}); Ctrl-C drains and stops",
            file=sys.stderr,
            flush=True,
        )
        running = asyncio.create_task(manager.run(), name="nest-manager")
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if running.done():
            running.result()  # a revoked credential ends the Nest: raise why
        print("agen nest: draining", file=sys.stderr, flush=True)
        await manager.drain()
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        print("agen nest: stopped", file=sys.stderr, flush=True)
    finally:
        if gateway is not None:
            await gateway.stop()
        await store.close()
