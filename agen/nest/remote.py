"""``agen nest run``: a Nest in its own process, on this machine or another, talking to the Hub only
through the API (the same ClientHubPort the Nest beside an ``agen up`` Hub uses, over HTTP).

First start: the one-time join token enrols the Nest (EnrolNest) and its own credential (scope nest,
bound to this Nest) is saved 0600 in its data folder (default AGEN_HOME/nests/<name>/nest.json); later
starts use that credential. With an https Hub the Nest also sends a CSR for a key it makes and keeps
the client certificate it gets (agen.nest.certs), presented on every call and renewed before it
expires. A saved credential the Hub rejects is replaced by a fresh enrolment when a join token is at
hand. Run data (runs, messages, spans) goes straight to the store named by ``--store`` (or a
namespace's ``--store-for``, agen.nest.stores), so running agents keep checkpointing while the Hub is
away; the Manager keeps its last assignments running and reports again when the Hub answers. A
revoked credential stops the Nest.

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
import ssl
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agen.bundle._base import HUB_URL_ENV
from agen.crypto.cahash import ca_hash_of
from agen.errors import DeniedError, InvalidError, UnauthenticatedError, UnavailableError
from agen.nest.certs import RENEW_BEFORE_MS, RENEW_CHECK_S, NestTls, keep_renewed
from agen.nest.certs import when as _when
from agen.store.base import now_ms
from agen.util.backoff import next_backoff
from agen.util.home import agen_home, make_private_dir, write_private

if TYPE_CHECKING:
    from agen.client import Client
    from agen.nest.manager import Manager
    from agen.nest.stores import NestStores

log = logging.getLogger("agen.nest")
CREDENTIAL = "nest.json"
TOKEN_KEYS = "token_keys.json"  # the Hub's public call-token keys (agen.gateway.auth.KeyRing)
RESOLVED = "resolved.json"  # the call tokens resolved for this Nest's instances (NestDelegation)


@dataclass
class NestOptions:
    hub: str
    store: str | None  # None only with store_for_only
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
    cert_renew_before_ms: int = RENEW_BEFORE_MS  # renew the client certificate when less remains
    cert_check_s: float = RENEW_CHECK_S  # how often its expiry is looked at
    clock: Callable[[], int] = now_ms  # what "now" is for that check
    store_for: dict[str, str] = field(default_factory=dict)  # namespace -> its instances' store
    store_for_only: bool = False  # namespaces without a store_for entry do not run here

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
    tls: NestTls | None = None  # an https Hub's client certificate (mTLS), presented with the token


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

        cred = self.credential
        async with hub_client(self.opts, cred.token, cred.tls) as client:
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


def read_credential(
    folder: Path, hub: str | tuple[str, ...], ca_hash: str | None = None
) -> Credential | None:
    """This Nest's saved credential for ``hub`` (or any of several Hubs on one store), or None (none
    yet, or one for another Hub). One with a certificate must be for the CA ``ca_hash`` pins."""
    path = folder / CREDENTIAL
    try:
        data = json.loads(path.read_text())
        cred = Credential(hub=data["hub"], nest_id=data["nest_id"], token=data["token"])
        ca_pem = data.get("ca")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InvalidError(
            f"{path}: not a Nest credential ({e}); delete it and start again with --join-token",
            file=str(path),
        ) from None
    hubs = (hub,) if isinstance(hub, str) else hub
    if cred.hub.rstrip("/") not in {h.rstrip("/") for h in hubs}:
        return None
    if not isinstance(ca_pem, str):
        return cred
    tls = NestTls(folder, ca_pem)
    if ca_hash is not None and tls.ca_hash != ca_hash:
        raise DeniedError(
            f"{path}: this Nest's certificate is from the Hub CA {tls.ca_hash}, but --ca-hash pins "
            f"{ca_hash}; check --ca-hash, or enrol again with a join token of that Hub"
        )
    return Credential(hub=cred.hub, nest_id=cred.nest_id, token=cred.token, tls=tls)


def hub_client(opts: NestOptions, token: str, tls: NestTls | None = None) -> Client:
    """A client of this Nest's Hubs: the first that answers, moving on when one stops answering. With
    ``tls`` (the Nest's own calls to an https Hub) it presents the Nest's client certificate and
    trusts only the CA that signed it."""
    from agen.client import Client, HttpTransport, Transport
    from agen.nest.certs import CertTransport
    from agen.nest.hubs import FailoverTransport

    def transport(context: ssl.SSLContext | None) -> Transport:
        if not opts.more_hubs:
            return HttpTransport(opts.hub, token, ca_hash=opts.ca_hash, tls=context)
        return FailoverTransport(
            list(opts.hubs),
            lambda url: HttpTransport(url, token, ca_hash=opts.ca_hash, tls=context),
        )

    if tls is None:
        return Client(transport(None))
    return Client(CertTransport(tls, transport))


async def enrol(opts: NestOptions) -> Credential:
    from agen.api import registry as r
    from agen.nest.certs import new_key_and_csr
    from agen.wire.nests import EnrolNestRequest

    if not opts.join_token:
        raise InvalidError(
            f"nest {opts.name} is not enrolled with {opts.hub} yet: pass --join-token (make one on the "
            "Hub's machine with `agen join-token create`)",
            field="--join-token",
        )
    https = any(h.startswith("https://") for h in opts.hubs)
    key_pem, csr = new_key_and_csr(opts.name) if https else (None, None)
    async with hub_client(opts, opts.join_token) as client:
        resp = await client.call(
            r.EnrolNest,
            EnrolNestRequest(name=opts.name, capacity=opts.capacity, labels=opts.labels, csr=csr),
        )
    saved: dict[str, str] = {"hub": opts.hub, "nest_id": resp.nest_id, "token": resp.token}
    tls = None
    make_private_dir(opts.folder)
    if resp.certificate is not None and key_pem is not None:
        if resp.ca is None or (opts.ca_hash is not None and ca_hash_of(resp.ca) != opts.ca_hash):
            raise DeniedError(
                f"the Hub at {opts.hub} handed back its certificate with a CA that is not the pinned "
                f"{opts.ca_hash}; refusing it (the join token is used up: make another)"
            )
        tls = NestTls.save(opts.folder, resp.ca, resp.certificate, key_pem)
        saved["ca"] = resp.ca
    elif https:
        log.warning(
            "nest %s: the Hub at %s issued no client certificate (it does not serve TLS itself: a "
            "TLS-terminating proxy in front?); this Nest calls with its credential alone",
            opts.name,
            opts.hub,
        )
    write_private(opts.folder / CREDENTIAL, json.dumps(saved) + "\n")
    cred = Credential(hub=opts.hub, nest_id=resp.nest_id, token=resp.token, tls=tls)
    where = f"credential saved in {opts.folder / CREDENTIAL}"
    if tls is not None:
        where += f", client certificate (valid until {_when(tls.not_after_ms)}) in {tls.path}"
    print(
        f"agen nest: enrolled as nest {opts.name} ({cred.nest_id}); {where}",
        file=sys.stderr,
        flush=True,
    )
    return cred


async def _manager(
    opts: NestOptions,
    cred: Credential,
    stores: NestStores,
    gateway: RunningGateway | None,
    stop: asyncio.Event,
) -> Manager | None:
    from agen.nest.backends import backend_factory
    from agen.nest.client_port import ClientHubPort
    from agen.nest.delegation import NestDelegation
    from agen.nest.executor import ExecutorFactory
    from agen.nest.manager import Manager

    port = ClientHubPort(hub_client(opts, cred.token, cred.tls))
    delegation = NestDelegation(port.client, saved=opts.folder / RESOLVED)
    factories: dict[int, ExecutorFactory] = {
        id(store): backend_factory(
            store,
            opts.backend,
            opts.host_memory_limit,
            progress=port.report_progress,
            delegation=delegation,
        )
        for store in stores.all()
    }

    def factory_for(namespace: str) -> ExecutorFactory:
        return factories[id(stores.for_namespace(namespace))]

    manager = Manager(
        port,
        executor_factory=next(iter(factories.values())),
        factory_for=factory_for if stores.by_namespace else None,
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
        delay_s = next_backoff(delay_s, 1.0, 30.0)


async def _keep_renewed(opts: NestOptions, cred: Credential, manager: Manager) -> None:
    """Renew the client certificate over the Manager's own connection to the Hub (agen.nest.certs)."""
    from agen.nest.client_port import ClientHubPort

    assert cred.tls is not None and isinstance(manager.port, ClientHubPort)
    await keep_renewed(
        cred.tls,
        manager.port.client,
        cred.nest_id,
        opts.name,
        renew_before_ms=opts.cert_renew_before_ms,
        clock=opts.clock,
        check_s=opts.cert_check_s,
    )


async def run_nest(opts: NestOptions, start_gateway: GatewayStarter | None = None) -> None:
    """Enrol if needed, then run the Manager (and the Gateway, when ``start_gateway`` is given)
    until SIGINT/SIGTERM (drain) or a revoked credential."""
    from agen.nest.stores import NestStores

    cred = read_credential(opts.folder, opts.hubs, opts.ca_hash)
    os.environ[HUB_URL_ENV] = opts.hub  # ${AGEN_HUB_URL} in a bundle's mcp.json: the first Hub
    stores = await NestStores.open(None if opts.store_for_only else opts.store, opts.store_for)
    gateway: RunningGateway | None = None
    renewing: asyncio.Task[None] | None = None
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
            manager = await _manager(opts, cred, stores, gateway, stop)
        except UnauthenticatedError:
            if not opts.join_token:
                raise
            log.warning("nest %s: the saved credential was refused; enrolling again", opts.name)
            cred = link.credential = await enrol(opts)
            manager = await _manager(opts, cred, stores, gateway, stop)
        if manager is None:
            print("agen nest: stopped", file=sys.stderr, flush=True)
            return
        print(
            f"agen nest: nest {opts.name} ({manager.nest_id}) runs up to {opts.capacity or 'any'} "
            f"instances for {', '.join(opts.hubs)} ({stores.describe()}, backend {opts.backend}); Ctrl-C drains and stops",
            file=sys.stderr,
            flush=True,
        )
        running = asyncio.create_task(manager.run(), name="nest-manager")
        stopping = asyncio.create_task(stop.wait())
        if cred.tls is not None:
            renewing = asyncio.create_task(_keep_renewed(opts, cred, manager), name="nest-cert")
        await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if renewing is not None:
            renewing.cancel()
            await asyncio.gather(renewing, return_exceptions=True)
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
        await stores.close()
