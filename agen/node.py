"""A Hub, its leader loop and one local Nest in this process: ``agen up`` and embedded ``agen run``.

The parts keep their authority split (the Manager only pulls through its HubPort), so the
same pieces run apart when a team outgrows one machine (DESIGN.md §1).

``only_deployment`` scopes the node to one deployment (the embedded one-shot), plus those that
the unfinished tasks of ``only_tree`` (a root task id) run on: its leader ticks them on this node's
own Nest and nothing else, and the Nest is retired (no longer active) on drain.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from agen.client import Client
from agen.errors import AgenError
from agen.hub.auth import LOCAL_NEST
from agen.hub.fleet.instances import retire_nest
from agen.hub.leader.loop import LeaderLoop
from agen.hub.leader.scheduler import Scope
from agen.hub.rpc.live import LiveRelay
from agen.hub.service import Hub
from agen.nest.backends import backend_factory
from agen.nest.client_port import ClientHubPort
from agen.nest.delegation import NestDelegation
from agen.nest.executor import ExecutorFactory
from agen.nest.manager import Manager
from agen.store import Store


class LocalNode:
    def __init__(
        self,
        store: Store,
        *,
        capacity: int = 8,
        executor_factory: ExecutorFactory | None = None,
        nest_name: str = "local",
        lease_ms: int = 30_000,
        tick_s: float = 1.0,
        heartbeat_s: float = 1.0,
        leader_ttl_ms: int = 10_000,
        drain_timeout_s: float = 300.0,
        backend: str = "inproc",
        host_memory_limit: int = 0,
        only_deployment: str | None = None,
        only_tree: str | None = None,
        hub: Hub | None = None,
    ) -> None:
        self.store = store
        self.hub = hub or Hub(store)
        self.only_deployment = only_deployment
        self.only_tree = only_tree
        self.port = ClientHubPort(Client.in_process(self.hub, LOCAL_NEST))
        self.manager = Manager(
            self.port,
            executor_factory=executor_factory
            or backend_factory(
                store,
                backend,
                host_memory_limit,
                progress=self.port.report_progress,
                delegation=NestDelegation(self.port.client),
            ),
            name=nest_name,
            capacity=capacity,
            lease_ms=lease_ms,
            heartbeat_s=heartbeat_s,
            drain_timeout_s=drain_timeout_s,
        )
        self.leader = LeaderLoop(
            self.hub, ttl_ms=leader_ttl_ms, tick_s=tick_s, on_tick=self._ticked
        )
        self.hub.in_flight = self.manager.in_flight
        self.relay = LiveRelay(
            self.hub
        )  # live events to and from the other Hubs on a Postgres store
        self._tasks: list[asyncio.Task[Any]] = []

    def _ticked(self, summary: Any) -> None:
        if summary.assignments_changed or summary.scaled:
            self.manager.kick()

    async def start(self) -> None:
        self.relay.start()
        await self.manager.start()
        if self.only_deployment is not None:
            self.leader.scope = Scope(self.only_deployment, self.manager.nest_id, self.only_tree)
        await self.leader.step()
        await self.manager.tick()
        self._tasks = [
            asyncio.create_task(self.leader.run(), name="hub-leader"),
            asyncio.create_task(self.manager.run(), name="nest-manager"),
        ]

    async def drain(self, timeout_s: float | None = None) -> None:
        """Stop leasing, let running tasks finish, give back what has not started, stop leading."""
        self.hub.draining = True
        await self.manager.drain(timeout_s)
        await self.leader.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        await self.relay.stop()
        if self.only_deployment is not None and self.manager.nest_id:
            nest_id = self.manager.nest_id
            with contextlib.suppress(AgenError):
                await self.store.write(lambda tx: retire_nest(tx, nest_id))


class HubNode:
    """The Hub alone (``agen hub serve``): the caller serves its API, its leader loop runs here, and the
    Nests in other processes or machines (``agen nest run``) pull their work through the API."""

    def __init__(self, store: Store, *, tick_s: float = 1.0, leader_ttl_ms: int = 10_000) -> None:
        self.store = store
        self.hub = Hub(store)
        self.manager: Manager | None = None
        self.leader = LeaderLoop(self.hub, ttl_ms=leader_ttl_ms, tick_s=tick_s)
        self.relay = LiveRelay(
            self.hub
        )  # live events to and from the other Hubs on a Postgres store
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.relay.start()
        await self.leader.step()
        self._task = asyncio.create_task(self.leader.run(), name="hub-leader")

    async def drain(self, timeout_s: float | None = None) -> None:
        """Stop leading; the Nests keep their running work and report it to the next Hub they reach."""
        self.hub.draining = True
        await self.leader.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        await self.relay.stop()
