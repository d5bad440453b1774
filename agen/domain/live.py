"""Live events: what a run does between its checkpoints, fanned out in memory, never stored.

A run streams its answer (``run.delta``: a piece of text or thinking) and says when a model call or
a tool call starts and ends (``model.started``, ``model.finished``, ``tool.started``,
``tool.finished``). These are for watching (``agen run``, the TUI, the SDK, A2A
``message/stream``, ``/api/v1/events``); the record stays the checkpoint (messages and spans,
written at the turn's end), so a follower that connects late reads the turn from the Store, and a
dropped live event loses nothing durable. Writing an event row per delta would add a write per
word to a path designed around one write per turn.

The bus lives in the process that runs the engine: the runners publish, the Hub's SSE door and
in-process callers subscribe. In ``agen up`` and an embedded ``agen run`` (one process) that is
everything; a run on a separate Nest process publishes to its own process's bus (docs/events.md:
what works where).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

LIVE_TYPES = ("run.delta", "model.started", "model.finished", "tool.started", "tool.finished")
QUEUE_SIZE = 4096
"""Events a subscriber may lag behind before new ones are dropped for it (counted in ``dropped``):
a slow reader never slows a run."""


@dataclass(frozen=True)
class LiveEvent:
    type: str
    namespace: str
    deployment: str
    run_id: str
    task_id: str | None
    data: dict[str, Any]
    created_ms: int

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
    """One reader's queue of live events that pass its filter."""

    wants: Callable[[LiveEvent], bool]
    queue: asyncio.Queue[LiveEvent] = field(default_factory=lambda: asyncio.Queue(QUEUE_SIZE))
    dropped: int = 0

    def offer(self, event: LiveEvent) -> None:
        if not self.wants(event):
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1

    async def __aiter__(self) -> AsyncIterator[LiveEvent]:
        while True:
            yield await self.queue.get()


class LiveBus:
    """Publish-subscribe of live events within one process and its event loop."""

    def __init__(self) -> None:
        self._subs: dict[int, Subscription] = {}
        self._ids = itertools.count()

    def publish(self, event: LiveEvent) -> None:
        for sub in tuple(self._subs.values()):
            sub.offer(event)

    def subscribe(self, wants: Callable[[LiveEvent], bool]) -> tuple[int, Subscription]:
        """A new subscription and its key (for ``unsubscribe``)."""
        key = next(self._ids)
        sub = Subscription(wants)
        self._subs[key] = sub
        return key, sub

    def unsubscribe(self, key: int) -> None:
        self._subs.pop(key, None)

    @property
    def listening(self) -> bool:
        """Someone subscribes: a publisher may skip building events nobody reads."""
        return bool(self._subs)


BUS = LiveBus()
"""This process's bus: the runners of this process publish to it, its doors subscribe."""
