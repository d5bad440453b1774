"""The leader loop: hold the Hub leader lease, then run the scheduler tick (seed 000 §5).

Several Hubs may share one store; only the holder of the lease ticks, and every tick is
epoch-checked by the scheduler, so a paused ex-leader cannot write after a takeover.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from ulid import ULID

from agen.errors import AgenError
from agen.hub import leader, scheduler
from agen.hub.service import Hub

log = logging.getLogger("agen.hub")


class LeaderLoop:
    def __init__(self, hub: Hub, *, holder: str | None = None, ttl_ms: int = 10_000, tick_s: float = 1.0,
                 on_tick: Callable[[scheduler.TickSummary], None] | None = None) -> None:
        self.hub = hub
        self.holder = holder or f"hub-{ULID()}"
        self.ttl_ms = ttl_ms
        self.tick_s = tick_s
        self.on_tick = on_tick
        self.epoch: int | None = None
        self._stop = asyncio.Event()

    @property
    def is_leader(self) -> bool:
        return self.epoch is not None

    async def step(self) -> scheduler.TickSummary | None:
        """Renew (or try to take) the lease; when leading, run one scheduler tick."""
        store = self.hub.store
        self.epoch = await store.write(lambda tx: leader.acquire_or_renew(tx, leader.HUB_LEADER, self.holder, self.ttl_ms))
        epoch = self.epoch
        if epoch is None:
            return None
        summary = await store.write(lambda tx: scheduler.schedule_tick(
            tx, leader_name=leader.HUB_LEADER, leader_epoch=epoch, now_ms=tx.now_ms))
        if summary.requeued or summary.woken or summary.assignments_changed or summary.scaled:
            self.hub.work.notify()
        if self.on_tick is not None:
            self.on_tick(summary)
        return summary

    async def run(self) -> None:
        kick = self.hub.scheduler_kick
        while not self._stop.is_set():
            kick.clear()
            try:
                await self.step()
            except AgenError as e:
                self.epoch = None
                log.warning("leader tick failed: %s", e)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(kick.wait(), timeout=self.tick_s)

    async def stop(self) -> None:
        self._stop.set()
        self.hub.scheduler_kick.set()
        if self.epoch is not None:
            with contextlib.suppress(AgenError):
                await self.hub.store.write(lambda tx: leader.step_down(tx, leader.HUB_LEADER, self.holder))
            self.epoch = None
