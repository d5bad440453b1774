"""The HTTP side every API provider shares: one httpx2 client per account, at most
``max_in_flight`` calls at once (the pool has a connection per allowed call, so no request waits
inside httpx), transport failures mapped to retryable ProviderErrors, and streamed answers read
as server-sent events.

The client is httpx2 (the httpx fork mcp is built on, a dependency already), for its server-sent
events: ``sse_events`` reads a streamed answer with ``httpx2.EventSource`` (SSE framing is not
hand-written) and yields each event's name and data; the provider modules read their API's events
from it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from agen.runner.providers.base import ModelProvider, ProviderError

KEEP_ALIVE = 20
"""Idle connections kept open: httpcore scans them on every request (1,000 calls: 28 s with 100 kept
alive, 7.5 s with 20), so a larger maxInFlight opens more connections but keeps no more idle."""


class Endpoint:
    """One provider account's base URL, headers and in-flight cap."""

    def __init__(
        self,
        name: str,
        base_url: str,
        headers: dict[str, str],
        *,
        timeout_s: float,
        max_in_flight: int,
    ) -> None:
        self.name, self.base_url, self.max_in_flight = name, base_url, max_in_flight
        limits = httpx2.Limits(
            max_connections=max_in_flight, max_keepalive_connections=min(KEEP_ALIVE, max_in_flight)
        )
        self.client = httpx2.AsyncClient(
            base_url=base_url, headers=headers, timeout=timeout_s, limits=limits
        )
        self._slots = asyncio.Semaphore(max_in_flight)
        self.waiting = 0  # calls waiting for one of the max_in_flight slots

    async def _acquire(self) -> None:
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1

    def _transport_error(self, e: httpx2.HTTPError) -> ProviderError:
        if isinstance(e, httpx2.TimeoutException):
            return ProviderError(
                "retryable", f"{self.name}: the request to {self.base_url} timed out ({e})"
            )
        return ProviderError("retryable", f"{self.name}: cannot reach {self.base_url}: {e}")

    async def post(self, path: str, body: dict[str, Any]) -> httpx2.Response:
        """The response, whatever its status (the provider reads its own errors); a timeout or an
        unreachable server is a retryable ProviderError."""
        await self._acquire()
        try:
            return await self.client.post(path, json=body)
        except httpx2.HTTPError as e:
            raise self._transport_error(e) from e
        finally:
            self._slots.release()

    @contextlib.asynccontextmanager
    async def stream(self, path: str, body: dict[str, Any]) -> AsyncIterator[httpx2.Response]:
        """The response with its body not yet read (for SSE), holding one in-flight slot until the
        caller is done. A timeout (the request's timeout applies to each read, so a stream that
        stalls that long fails), a dropped connection or an unreachable server, before or during
        the stream, is a retryable ProviderError."""
        await self._acquire()
        try:
            request = self.client.build_request("POST", path, json=body)
            response = await self.client.send(request, stream=True)
            try:
                yield response
            finally:
                await response.aclose()
        except httpx2.HTTPError as e:
            raise self._transport_error(e) from e
        finally:
            self._slots.release()

    async def aclose(self) -> None:
        await self.client.aclose()


async def sse_events(response: httpx2.Response) -> AsyncIterator[tuple[str, str]]:
    """(event name, data) of each server-sent event of a streamed response ("message" when the
    event names none). An answer that is not an event stream is a retryable ProviderError."""
    try:
        async for sse in httpx2.EventSource(response):
            yield sse.event, sse.data
    except httpx2.SSEError as e:
        raise ProviderError(
            "retryable", f"the streamed answer is not server-sent events: {e}"
        ) from e


async def error_text(response: httpx2.Response) -> str:
    """The first 2,000 characters of an error answer's body (a streamed one is read first)."""
    await response.aread()
    return response.text[:2000]


class HttpProvider(ModelProvider):
    """A provider spoken over HTTP through one Endpoint (set by the subclass's constructor)."""

    endpoint: Endpoint

    @property
    def max_in_flight(self) -> int:
        return self.endpoint.max_in_flight

    @property
    def waiting(self) -> int:
        """Calls waiting for one of the max_in_flight slots."""
        return self.endpoint.waiting

    async def aclose(self) -> None:
        await self.endpoint.aclose()
