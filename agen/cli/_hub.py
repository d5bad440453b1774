"""Running a command against the Hub: one client per command, async under the hood."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from agen.client import Client

T = TypeVar("T")


def with_client(hub: str | None, token: str | None, fn: Callable[[Client], Awaitable[T]]) -> T:
    """Connect (--hub/--token, else the local `agen up`), run ``fn``, close."""
    from agen.client import Client

    async def go() -> T:
        async with Client.from_options(hub, token) as client:
            return await fn(client)

    return run(go())


def run(main: Coroutine[object, object, T]) -> T:
    """``asyncio.run(main)``, with the result handed back outside the main task. On the way out,
    ``asyncio.Runner`` asks ``signal.getsignal(SIGINT)``, which tries to turn the runner's own handler
    into an enum member and formats the failure with ``repr`` of that handler: a partial holding the
    main task, and so the repr of the task's result. For ``agen ps`` at 1,000 deployments that repr
    of the response cost ~17 ms, for a message nobody reads."""
    box: list[T] = []

    async def boxed() -> None:
        box.append(await main)

    asyncio.run(boxed())
    return box[0]


def ago(ms: int | None) -> str:
    if not ms:
        return "-"
    secs = max(0, int(time.time() - ms / 1000))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit} ago"
    return f"{secs}s ago"


def when(ms: int | None) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time_ms(text: str, *, flag: str) -> int:
    """RFC 3339 (``2026-10-18T09:00:00Z``) to epoch milliseconds."""
    from agen.errors import InvalidError

    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidError(
            f"{flag}: {text!r} is not an RFC 3339 time, e.g. 2026-10-18T09:00:00Z", field=flag
        ) from None
    if dt.tzinfo is None:
        raise InvalidError(f"{flag}: {text!r} has no time zone; add Z or an offset", field=flag)
    return int(dt.timestamp() * 1000)


def hold_until(at: str | None, in_: str | None) -> int | None:
    from agen.cli._common import parse_duration_ms
    from agen.errors import InvalidError

    if at and in_:
        raise InvalidError("--at and --in both set the end of the hold; pass one", field="--at")
    if at:
        return parse_time_ms(at, flag="--at")
    if in_:
        return int(time.time() * 1000) + parse_duration_ms(in_, flag="--in")
    return None
