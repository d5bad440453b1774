"""Finishing a write (or a remote cancel) that a run must complete even while it is being stopped."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def finish_even_if_cancelled(aw: Awaitable[T]) -> T:
    """``aw``'s result, awaited to its end even when the caller is cancelled again meanwhile. A run can
    be stopped twice (a cancel, then its lost lease): a plain ``asyncio.shield`` lets the second stop
    through at once, so the caller moves on (closing its HTTP client, ending the task) while ``aw``
    still runs. ``aw`` bounds its own time. A cancel that arrived meanwhile stays counted on the task
    (``Task.cancelling()``): the caller re-raises it afterwards."""
    task = asyncio.ensure_future(aw)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
    return task.result()
