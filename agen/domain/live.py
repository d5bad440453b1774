"""Live events: what a run does between its checkpoints, fanned out in memory, never stored.

A run streams its answer (``run.delta``: a piece of text or thinking) and says when a model call or
a tool call starts and ends (``model.started``, ``model.finished``, ``tool.started``,
``tool.finished``). These are for watching (``agen run``, the TUI, the SDK, A2A
``message/stream``, ``/api/v1/events``); the record stays the checkpoint (messages and spans,
written at the turn's end), so a follower that connects late reads the turn from the Store, and a
dropped live event loses nothing durable. Writing an event row per delta would add a write per
word to a path designed around one write per turn.

The bus lives in each process: the runners publish, the Hub's SSE door and in-process callers
subscribe. In ``agen up`` and an embedded ``agen run`` (one process) that is everything. Across
processes the events are carried to the Hub's bus: an ``agen host serve`` child sends its own over
its pipe to its Manager (agen.nest.process), a Nest in another process forwards its bus's in batches
with the ``PublishLive`` RPC (agen.nest.manager), and Hubs sharing a Postgres store pass them on
to each other with NOTIFY (agen.hub.rpc.live); docs/providers.md, what works where.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

LIVE_TYPES = ("run.delta", "model.started", "model.finished", "tool.started", "tool.finished")
QUEUE_SIZE = 4096
"""Events a subscriber may lag behind before new ones are dropped for it (counted in ``dropped``):
a slow reader never slows a run."""
OPEN_CALLS = 1000
"""Model calls in progress whose events so far the bus keeps for late subscribers (the oldest is
forgotten beyond it: a call stopped without its ``model.finished``, by a cancel, never lingers)."""


@dataclass(frozen=True)
class LiveEvent:
    type: str
    namespace: str
    deployment: str
    run_id: str
    task_id: str | None
    data: dict[str, Any]
    created_ms: int
    relayed: bool = False
    """Published here from another Hub's NOTIFY (agen.hub.rpc.live): not sent on to the Hubs again."""

    def to_dict(self) -> dict[str, Any]:
        """The shape of a stored event (``seq`` None: it has no place in the log)."""
        return {
            "seq": None,
            "id": None,
            "namespace": self.namespace,
            "type": self.type,
            "severity": "info",
            "deployment": self.deployment,
            "task_id": self.task_id,
            "run_id": self.run_id,
            "labels": {},
            "data": self.data,
            "created_ms": self.created_ms,
        }


@dataclass(eq=False)
class Subscription:
    """One reader's queue of live events that pass its filter, on the reader's event loop (a
    publisher on another thread's loop, such as a test's HTTP server thread, hands over safely)."""

    wants: Callable[[LiveEvent], bool]
    queue: asyncio.Queue[LiveEvent] = field(default_factory=lambda: asyncio.Queue(QUEUE_SIZE))
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.get_running_loop)
    dropped: int = 0

    def offer(self, event: LiveEvent) -> None:
        if not self.wants(event):
            return
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is self.loop:
            self._put(event)
        elif not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._put, event)

    def _put(self, event: LiveEvent) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1

    async def __aiter__(self) -> AsyncIterator[LiveEvent]:
        while True:
            yield await self.queue.get()


class LiveBus:
    """Publish-subscribe of live events within one process.

    A subscriber first gets the model calls in progress so far (their ``model.started`` and
    deltas), then everything as it comes: whoever starts watching mid-answer (``agen run`` over
    HTTP subscribing just after its task started, the TUI opening a running transcript) sees the
    answer from its first word. Earlier turns are in the Store (the checkpoint)."""

    def __init__(self) -> None:
        self._subs: dict[int, Subscription] = {}
        self._ids = itertools.count()
        self._open: dict[str, list[LiveEvent]] = {}  # run id -> its model call in progress
        self._on_subscribe: list[Callable[[], None]] = []

    def publish(self, event: LiveEvent) -> None:
        if event.type == "model.started":
            self._open.pop(event.run_id, None)
            self._open[event.run_id] = [event]
            if len(self._open) > OPEN_CALLS:
                self._open.pop(next(iter(self._open)))
        elif event.type == "run.delta":
            call = self._open.get(event.run_id)
            if call is not None:
                call.append(event)
        elif event.type == "model.finished":
            self._open.pop(event.run_id, None)
        for sub in tuple(self._subs.values()):
            sub.offer(event)

    def wants(self, event: LiveEvent) -> bool:
        """Whether any subscriber would take ``event`` now: a publisher that would make many
        events (a delta per word) checks once, and makes fewer when nobody is listening."""
        return any(sub.wants(event) for sub in tuple(self._subs.values()))

    def subscribers(self) -> int:
        return len(self._subs)

    def on_subscribe(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever someone subscribes (the Hub's relay then asks the other Hubs
        for their runs' events: agen.hub.rpc.live)."""
        self._on_subscribe.append(callback)

    @contextlib.contextmanager
    def subscribe(self, wants: Callable[[LiveEvent], bool]) -> Iterator[Subscription]:
        """The live events ``wants`` accepts: the model calls in progress so far, then each as it
        is published, until the block ends."""
        key = next(self._ids)
        sub = Subscription(wants)
        for call in tuple(self._open.values()):
            for event in tuple(call):
                sub.offer(event)
        self._subs[key] = sub
        for callback in tuple(self._on_subscribe):
            callback()
        try:
            yield sub
        finally:
            self._subs.pop(key, None)


BUS = LiveBus()
"""This process's bus: the runners of this process publish to it, its doors subscribe."""


async def merge(first: AsyncIterator[T], *others: AsyncIterator[T]) -> AsyncIterator[T]:
    """The items of several iterators as each comes; ends when ``first`` ends (another ending, or
    failing, only stops its own items: a live stream that is not there leaves the rest as it was)."""
    queue: asyncio.Queue[tuple[bool, Any]] = asyncio.Queue(maxsize=256)

    async def pump(source: AsyncIterator[T], main: bool) -> None:
        try:
            async for item in source:
                await queue.put((False, item))
        except Exception as e:
            if main:
                await queue.put((True, e))
                return
        if main:
            await queue.put((True, None))

    tasks = [asyncio.create_task(pump(first, True))]
    tasks += [asyncio.create_task(pump(o, False)) for o in others]
    try:
        while True:
            done, item = await queue.get()
            if done:
                if item is not None:
                    raise item
                return
            yield item
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
