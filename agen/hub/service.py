"""The Hub service: the state every RPC handler shares (store, auth, drain, wake-ups).

Handlers live by area (deployments.py, tasks.py, approvals.py, tokens.py) as plain
``async def handler(hub, principal, request) -> response`` functions; the API registry
(agen.api.registry) names them, so HTTP, the in-process client and MCP reach the same code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from agen.hub.auth import Authenticator
from agen.store import Store, now_ms


class WorkSignal:
    """Wakes local Nest workers when tasks become leasable, so nobody polls per task."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()

    async def wait(self, timeout_s: float) -> None:
        event = self._event
        if not event.is_set():
            try:
                await asyncio.wait_for(event.wait(), timeout=timeout_s)
            except TimeoutError:
                return
        if self._event is event:
            self._event = asyncio.Event()


class Hub:
    """One Hub: its store plus the process-local state the API needs."""

    def __init__(self, store: Store, *, clock: Callable[[], int] = now_ms) -> None:
        self.store = store
        self.clock = clock
        self.auth = Authenticator(store)
        self.work = WorkSignal()
        self.draining = False
        self.in_flight: Callable[[], int] = lambda: 0
        self.shutdown_requested = asyncio.Event()
        self.url: str | None = None
        self._cancel_listeners: list[Callable[[str], None]] = []

    def on_cancel(self, listener: Callable[[str], None]) -> None:
        """A local Nest stops a cancelled task's run at once instead of at its next lease check."""
        self._cancel_listeners.append(listener)

    def notify_cancelled(self, task_id: str) -> None:
        for listener in self._cancel_listeners:
            listener(task_id)

    def request_shutdown(self) -> None:
        self.shutdown_requested.set()
