"""The Hub service: the state every RPC handler shares (store, auth, drain, wake-ups).

Handlers live by area (deployments.py, tasks.py, approvals.py, tokens.py) as plain
``async def handler(hub, principal, request) -> response`` functions; the API registry
(agen.api.registry) names them, so HTTP, the in-process client and MCP reach the same code.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agen.domain.live import BUS, LiveBus
from agen.hub.auth import Authenticator
from agen.store import Store, now_ms

if TYPE_CHECKING:
    from agen.hub.events.counters import FleetCounters
    from agen.hub.tls import HubTls, NestCa


class WorkSignal:
    """Wakes local Nest workers when tasks become leasable, so nobody polls per task.

    A generation counter means a notify that lands between a worker's lease and its
    next wait is not lost: the worker passes the generation it last saw. ``notify`` also tells the
    Hubs of other processes on the same store (``broadcast``: Store.wake_others, a NOTIFY on
    Postgres), whose ``notify_local`` then wakes their workers.
    """

    def __init__(self, broadcast: Callable[[], None] | None = None) -> None:
        self.generation = 0
        self._event = asyncio.Event()
        self._broadcast = broadcast

    def notify(self) -> None:
        self.notify_local()
        if self._broadcast is not None:
            self._broadcast()

    def notify_local(self) -> None:
        self.generation += 1
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait(self, seen: int, timeout_s: float) -> int:
        if self.generation == seen:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), timeout=timeout_s)
        return self.generation


class Hub:
    """One Hub: its store plus the process-local state the API needs."""

    def __init__(self, store: Store, *, clock: Callable[[], int] = now_ms) -> None:
        self.store = store
        self.clock = clock
        self.auth = Authenticator(store)
        self.work = WorkSignal(store.wake_others)
        self.scheduler_kick = asyncio.Event()
        store.on_woken(self._woken_by_another_hub)
        self.draining = False
        # the live events of the runs in this process (deltas, model and tool calls), for the SSE door
        self.live: LiveBus = BUS
        self.in_flight: Callable[[], int] = lambda: 0
        self.shutdown_requested = asyncio.Event()
        self.url: str | None = None
        self.gateway_urls: list[
            str
        ] = []  # the A2A Gateways serving this Hub's deployments (ResolveAgent)
        self.tls_ca_pem: str | None = (
            None  # `agen hub serve --tls`: served at /ca.pem for pinning clients
        )
        self.tls_ca_hash: str | None = None
        self.nest_ca: NestCa | None = None  # a TLS Hub signs Nest client certificates (serve_tls)
        self.allow_self_approval = (
            False  # `agen up --allow-self-approval`: any token may approve its own work
        )
        self._cancel_listeners: list[Callable[[str], None]] = []
        # `agen up` with AGEN_OTLP_ENDPOINT: the exporter's counts (agen.otel.exporter), for GetMetrics and /health.
        self.otlp_stats: Callable[[], dict[str, Any]] | None = None
        self._fleet_counters: FleetCounters | None = None

    def fleet_counters(self) -> FleetCounters:
        """The totals /metrics exposes (agen.hub.events.counters), made on the first scrape."""
        if self._fleet_counters is None:
            from agen.hub.events.counters import FleetCounters

            self._fleet_counters = FleetCounters(self.store)
        return self._fleet_counters

    def serve_tls(self, tls: HubTls, nest_cert_lifetime_ms: int) -> None:
        """This Hub serves HTTPS with the store's CA: it shows the CA, signs Nest certificates with it,
        and takes a Nest's credential only with its client certificate (seed 000 §10)."""
        from agen.hub.tls import NestCa

        self.tls_ca_pem, self.tls_ca_hash = tls.ca_pem, tls.ca_hash
        self.nest_ca = NestCa(tls.ca_pem, tls.ca_key_pem, nest_cert_lifetime_ms)
        self.auth.require_nest_certificates = True

    def on_cancel(self, listener: Callable[[str], None]) -> None:
        """A local Nest stops a cancelled task's run at once instead of at its next lease check."""
        self._cancel_listeners.append(listener)

    def notify_cancelled(self, task_id: str) -> None:
        for listener in self._cancel_listeners:
            listener(task_id)

    def desired_state_changed(self) -> None:
        """Ask the leader loop for a scheduler tick now (deploy, scale, stop, submit)."""
        self.scheduler_kick.set()
        self.work.notify()

    def _woken_by_another_hub(self) -> None:
        """Another process on this store submitted, deployed, approved…: tick (if leading) and lease now."""
        self.scheduler_kick.set()
        self.work.notify_local()

    def request_shutdown(self) -> None:
        self.shutdown_requested.set()
