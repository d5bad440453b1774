"""The leader loop: hold the Hub leader lease, then run the scheduler tick (seed 000 §5).

Several Hubs may share one store; only the holder of the lease ticks, and every tick is
epoch-checked by the scheduler, so a paused ex-leader cannot write after a takeover.

A scoped loop (an embedded one-shot, ``scheduler.Scope``) leads only its own share under its
own lease name: it ticks its deployment on its own Nest and runs none of the fleet-wide signals
(triggers, budget thresholds, pruning, announcements, notification delivery); ``agen up`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from agen.errors import AgenError
from agen.hub import leadership, queue
from agen.hub.leader import scheduler
from agen.hub.service import Hub
from agen.store import Tx, new_ulid, now_ms

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("agen.hub")
KICK_GAP_S = 0.25
"""A kick (a submit, a deploy, a scale…) ticks at once when the last tick began at least this long ago
(or ``tick_s``, when shorter), else when it is that old: a stream of submits would otherwise run ticks back to back (some 30
statements and 3 commits each, competing with the tasks for the store), while one tick reads every
submit made before it began."""


class LeaderLoop:
    def __init__(
        self,
        hub: Hub,
        *,
        holder: str | None = None,
        ttl_ms: int = 10_000,
        tick_s: float = 1.0,
        on_tick: Callable[[scheduler.TickSummary], None] | None = None,
        http_factory: Callable[[], httpx.AsyncClient] | None = None,
    ) -> None:
        self.hub = hub
        self.holder = holder or f"hub-{new_ulid()}"
        self.ttl_ms = ttl_ms
        self.tick_s = tick_s
        self.on_tick = on_tick
        self.epoch: int | None = None
        self._stop = asyncio.Event()
        self._last_prune_ms = 0
        self._last_warnings_ms = 0
        self._http: httpx.AsyncClient | None = None
        self._http_factory = http_factory or _default_http
        self.scope: scheduler.Scope | None = None

    @property
    def is_leader(self) -> bool:
        return self.epoch is not None

    @property
    def lease_name(self) -> str:
        """The Hub leader lease, or a one-shot's own (it never contends with, or fences, anyone's)."""
        return leadership.HUB_LEADER if self.scope is None else f"oneshot:{self.scope.nest_id}"

    async def step(self) -> scheduler.TickSummary | None:
        """Renew (or try to take) the lease; when leading, run one scheduler tick."""
        store = self.hub.store
        name, scope = self.lease_name, self.scope
        self.epoch = await store.write(
            lambda tx: leadership.acquire_or_renew(tx, name, self.holder, self.ttl_ms)
        )
        epoch = self.epoch
        if epoch is None:
            return None
        counts = await queue.read_queue_counts(
            store, now_ms=now_ms()
        )  # off the writer: a scan; tx time

        def tick(tx: Tx) -> scheduler.TickSummary:
            budget_held, provider_held = scheduler.held_sets(tx, tx.now_ms)
            return scheduler.schedule_tick(
                tx,
                leader_name=name,
                leader_epoch=epoch,
                now_ms=tx.now_ms,
                budget_held=budget_held,
                provider_held=provider_held,
                counts=counts,
                scope=scope,
            )

        summary = await store.write(tick)
        if scope is None:
            await self._signals(epoch)
        if summary.requeued or summary.woken or summary.assignments_changed or summary.scaled:
            self.hub.work.notify()
        for task_id in summary.cancelled:  # a local run past its graceful cancel stops now
            self.hub.notify_cancelled(task_id)
        if self.on_tick is not None:
            self.on_tick(summary)
        return summary

    async def _signals(self, epoch: int) -> None:
        """Triggers, budget thresholds, provider holds, event pruning, activity warnings (every 30 s), then
        notification delivery (the fleet-wide modules, triggers among them, load here: a scoped one-shot
        never needs them)."""
        from agen.hub.events import notify
        from agen.hub.leader import warning_events
        from agen.hub.leader.fleet_tick import PRUNE_EVERY_MS, fleet_tick
        from agen.hub.observe import live
        from agen.hub.triggers.webhook import env_secrets

        now = self.hub.clock()
        prune = now - self._last_prune_ms >= PRUNE_EVERY_MS
        report = await self.hub.store.write(
            lambda tx: fleet_tick(tx, leader_epoch=epoch, now_ms=now, prune=prune)
        )
        if prune:
            self._last_prune_ms = now
        if report.triggers.fired or report.resumed:
            self.hub.work.notify()
        if now - self._last_warnings_ms >= warning_events.EVERY_MS:
            self._last_warnings_ms = now
            warnings = (await live.collect(self.hub, [])).warnings
            if warnings:
                await self.hub.store.write(
                    lambda tx: warning_events.record_warnings(tx, warnings, now)
                )
        await notify.deliver_all(self.hub.store, self._client, now_ms=now, secrets=env_secrets)

    def _client(self) -> httpx.AsyncClient:
        """The delivery client, built on the first tick that has a notification target, then kept."""
        if self._http is None:
            self._http = self._http_factory()
        return self._http

    async def run(self) -> None:
        kick = self.hub.scheduler_kick
        loop = asyncio.get_running_loop()
        while not self._stop.is_set():
            kick.clear()
            began = loop.time()
            try:
                await self.step()
            except AgenError as e:
                self.epoch = None
                log.warning("leader tick failed: %s", e)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(kick.wait(), timeout=self.tick_s)
            if not self._stop.is_set():
                await self._stop_or(began + min(KICK_GAP_S, self.tick_s) - loop.time())

    async def _stop_or(self, wait_s: float) -> None:
        """Wait ``wait_s`` (the rest of KICK_GAP_S), ending early when the loop is stopped."""
        if wait_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=wait_s)

    async def stop(self) -> None:
        self._stop.set()
        self.hub.scheduler_kick.set()
        name, scoped = self.lease_name, self.scope is not None
        if self.epoch is not None or scoped:

            def give_up(tx: Tx) -> None:
                if scoped:  # a one-shot's lease is its alone: leave no row behind
                    tx.execute(
                        "DELETE FROM leases WHERE name = ? AND holder = ?", (name, self.holder)
                    )
                else:
                    leadership.step_down(tx, name, self.holder)

            with contextlib.suppress(AgenError):
                await self.hub.store.write(give_up)
            self.epoch = None
        if self._http is not None:
            await self._http.aclose()
            self._http = None


def _default_http() -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient()
