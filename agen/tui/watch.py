"""The one event watcher: ListEvents(after=cursor, wait) in a loop, fanned out as messages.

Views do not poll; they refresh when an event that concerns them arrives. A failed call
marks the connection lost (the app shows a banner) and retries with a growing pause; with ``follow``
(``agen tui`` on the local ``agen up``), each failure first asks whether the Hub moved (local.json
names another URL or token) and, if so, starts over on the new one at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from agen.api import registry as r
from agen.client import Client
from agen.errors import AgenError
from agen.tui.messages import ConnectionChanged, HubChanged
from agen.util.backoff import next_backoff
from agen.wire.signals import ListEventsRequest

WAIT_S = 20.0
FIRST_BACKOFF_S, MAX_BACKOFF_S = 0.25, 5.0


async def watch_events(
    current: Callable[[], Client],
    post: Callable[[object], object],
    *,
    wait_s: float = WAIT_S,
    follow: Callable[[], bool] | None = None,
) -> None:
    """Run until cancelled: post HubChanged for each batch and ConnectionChanged on loss/recovery.

    ``current`` gives the client to use now; ``follow`` returns True when it switched to another Hub.
    """
    cursor: int | None = None
    up: bool | None = None
    backoff = FIRST_BACKOFF_S
    while True:
        client = current()
        try:
            if cursor is None:
                cursor = (await client.call(r.ListEvents, ListEventsRequest(last=1))).cursor
            page = await client.call(
                r.ListEvents, ListEventsRequest(after=cursor, limit=500, wait_seconds=wait_s)
            )
        except AgenError as e:
            if up is not False:
                post(ConnectionChanged(False, e.message))
                up = False
            if follow is not None and follow():
                cursor, backoff = (
                    None,
                    FIRST_BACKOFF_S,
                )  # another Hub: its event log has its own cursors
                continue
            await asyncio.sleep(backoff)
            backoff = next_backoff(backoff, FIRST_BACKOFF_S, MAX_BACKOFF_S)
            continue
        backoff = FIRST_BACKOFF_S
        if up is not True:
            post(ConnectionChanged(True))
            up = True
        if page.events:
            post(HubChanged(page.events))
        cursor = page.cursor
