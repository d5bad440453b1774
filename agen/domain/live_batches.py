"""Live events in batches: how a process's live events (agen.domain.live) reach another process.

A Nest's go to its Hub (PublishLive, agen.nest.manager), an instance host's to its Manager (its
pipe, agen.nest.host), a Hub's to the other Hubs on its Postgres store (NOTIFY, agen.hub.rpc.live):
each is a ``LiveBatcher``, a reader of its process's bus that sends what came in the last ``EVERY_S``,
or ``BATCH`` events as soon as they are there, whichever comes first. A word reaches a watcher a few
tens of milliseconds later than in-process, for one call per batch instead of one per word.

Best effort by design: a send that fails drops its batch, with one warning a minute at most (the
record is the runs' checkpoints, never these events), and a slow send never slows a run: the bus
drops what a reader lags behind by (agen.domain.live.QUEUE_SIZE), counted in the next warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from agen.domain.live import BUS, LiveBus, LiveEvent, Subscription

log = logging.getLogger("agen.live")
EVERY_S = 0.05
BATCH = 64
WARN_EVERY_S = 60.0
STOP_TIMEOUT_S = 5.0

Refused = list[tuple[int, str]]
"""Events of a batch the receiver did not take: (how many, why), one entry per reason."""
Send = Callable[[list[LiveEvent]], Awaitable[Refused]]
"""Sends one batch; returns what of it was refused (empty: all was taken); raises when the batch did
not get through."""


def every_event(_event: LiveEvent) -> bool:
    return True


class LiveBatcher:
    """Reads ``bus`` from ``start()`` on and hands ``send`` the events in batches, one send at a time."""

    def __init__(
        self,
        send: Send,
        what: str,
        *,
        bus: LiveBus = BUS,
        wants: Callable[[LiveEvent], bool] = every_event,
        every_s: float = EVERY_S,
        batch: int = BATCH,
        warn_every_s: float = WARN_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.send = send
        self.what = what  # who sends where, for the warning ("nest n1: live events to the Hub")
        self.bus = bus
        self.wants = wants
        self.every_s = every_s
        self.batch = batch
        self.warn_every_s = warn_every_s
        self.clock = clock
        self.sent = 0  # events a send took
        self.lost = 0  # events a failed send dropped, or the Hub refused
        self._sub: Subscription | None = None
        self._stack = contextlib.ExitStack()
        self._task: asyncio.Task[None] | None = None
        self._gathered: list[LiveEvent] = []  # the batch being gathered
        self._sending: asyncio.Future[None] | None = None  # the send under way
        self._warned_at: float | None = None
        self._unsaid = 0  # problems since the last warning, not warned about
        self._dropped_said = 0  # the subscription's overflow count, as of the last warning

    @property
    def running(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        """Subscribe now (what is published from here on is carried) and start sending."""
        if self._task is not None:
            return
        sub = self._sub = self._stack.enter_context(self.bus.subscribe(self.wants))
        self._task = asyncio.create_task(self._run(sub), name=f"live-batches {self.what}")

    async def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop reading, then send what was read and not sent yet (for at most ``timeout_s``): the
        batch being gathered goes at once, without waiting out its window."""
        task, sub = self._task, self._sub
        if task is None or sub is None:
            return
        self._stack.close()
        task.cancel()  # where it gathers a batch; a send under way goes on (shielded)
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self._task = None
        rest, self._gathered = self._gathered, []
        while not sub.queue.empty():
            rest.append(sub.queue.get_nowait())

        async def finish() -> None:
            if self._sending is not None:
                await self._sending
            for i in range(0, len(rest), self.batch):
                await self._send(rest[i : i + self.batch], sub)

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(finish(), timeout_s)

    async def _run(self, sub: Subscription) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._gathered = [await sub.queue.get()]
            window: asyncio.Future[None] = loop.create_future()
            closes = loop.call_later(self.every_s, _close, window)
            try:
                await self._gather(sub, window)
            finally:
                closes.cancel()
            batch, self._gathered = self._gathered, []
            self._sending = asyncio.ensure_future(self._send(batch, sub))
            await asyncio.shield(self._sending)
            self._sending = None

    async def _gather(self, sub: Subscription, window: asyncio.Future[None]) -> None:
        """More events into the batch until it is full or ``window`` closes."""
        while len(self._gathered) < self.batch:
            if not sub.queue.empty():
                self._gathered.append(sub.queue.get_nowait())
                continue
            if window.done():
                return
            more = asyncio.ensure_future(sub.queue.get())
            try:
                await asyncio.wait((more, window), return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not more.done():
                    more.cancel()  # the queue keeps what it did not hand over
            if more.done() and not more.cancelled():
                self._gathered.append(more.result())

    async def _send(self, batch: list[LiveEvent], sub: Subscription) -> None:
        try:
            refused = await self.send(batch)
        except Exception as e:
            self.lost += len(batch)
            self._warn(f"{len(batch)} live events not sent ({e})", sub)
            return
        lost = sum(n for n, _why in refused)
        self.sent += len(batch) - lost
        if refused:
            self.lost += lost
            self._warn(f"{lost} live events refused ({refused[0][1]})", sub)
        elif sub.dropped > self._dropped_said:
            self._warn("the sends fell behind the runs", sub)

    def _warn(self, problem: str, sub: Subscription) -> None:
        """One warning per ``warn_every_s`` at most, counting what it did not say meanwhile."""
        now = self.clock()
        if self._warned_at is not None and now - self._warned_at < self.warn_every_s:
            self._unsaid += 1
            return
        dropped, self._dropped_said = sub.dropped - self._dropped_said, sub.dropped
        also = [f"{dropped} more dropped while the sends fell behind"] if dropped else []
        also += [f"{self._unsaid} more problems since the last warning"] if self._unsaid else []
        log.warning(
            "%s: %s%s; watchers miss them (the runs' record is unaffected)",
            self.what,
            problem,
            f" ({'; '.join(also)})" if also else "",
        )
        self._warned_at, self._unsaid = now, 0


def _close(window: asyncio.Future[None]) -> None:
    if not window.done():
        window.set_result(None)
