"""Several Hubs for one Nest: ``agen nest run --hub A --hub B``.

Every Hub on one store serves the same API (one of them leads), so when the Hub a Nest talks to
stops answering, any other will do. The Nest keeps calling the Hub that last answered and moves to
the next one only when a call cannot reach it (a connection error, or a 503 Unavailable answer): a
Nest whose Hub was killed keeps leasing and reporting through the others instead of waiting for it
to come back. A call retried on another Hub is safe because every Nest call is fenced by its lease
id or keyed by the Nest (a CompleteTask that did land is refused the second time, not repeated).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from agen.api.registry import Rpc
from agen.client import HttpTransport
from agen.errors import UnavailableError

log = logging.getLogger("agen.nest")


class FailoverTransport:
    """The transports of several Hubs, tried in turn from the one that answered last. Each is made
    when first needed (a pinned CA is fetched from its Hub then), so a Hub that is down when the
    Nest starts is skipped, and tried again when the others stop answering."""

    def __init__(self, urls: list[str], make: Callable[[str], HttpTransport]) -> None:
        if not urls:
            raise ValueError("FailoverTransport needs at least one Hub")
        self._urls = urls
        self._make = make
        self._transports: dict[int, HttpTransport] = {}
        self._current = 0

    @property
    def url(self) -> str:
        """The Hub calls go to now."""
        return self._urls[self._current]

    async def call(self, rpc: Rpc[Any, Any], request: BaseModel) -> BaseModel:
        last: UnavailableError | None = None
        count = len(self._urls)
        for step in range(count):
            index = (self._current + step) % count
            try:
                transport = self._transports.get(index)
                if transport is None:
                    transport = self._transports[index] = self._make(self._urls[index])
                result = await transport.call(rpc, request)
            except UnavailableError as e:
                last = e
                continue
            if index != self._current:
                log.warning(
                    "nest: %s did not answer; now using the Hub at %s",
                    self.url,
                    self._urls[index],
                )
                self._current = index
            return result
        assert last is not None
        if count > 1:
            urls = ", ".join(self._urls)
            raise UnavailableError(
                f"no Hub answers ({urls}): {last.message}", **last.details
            ) from None
        raise last

    async def aclose(self) -> None:
        for transport in self._transports.values():
            await transport.aclose()
