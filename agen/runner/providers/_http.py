"""The HTTP side every API provider shares: one httpx client per account, at most
``max_in_flight`` calls at once (the pool has a connection per allowed call, so no request waits
inside httpx), and transport failures mapped to retryable ProviderErrors."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

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
        limits = httpx.Limits(
            max_connections=max_in_flight, max_keepalive_connections=min(KEEP_ALIVE, max_in_flight)
        )
        self.client = httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=timeout_s, limits=limits
        )
        self._slots = asyncio.Semaphore(max_in_flight)
        self.waiting = 0  # calls waiting for one of the max_in_flight slots

    async def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """The response, whatever its status (the provider reads its own errors); a timeout or an
        unreachable server is a retryable ProviderError."""
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        try:
            return await self.client.post(path, json=body)
        except httpx.TimeoutException as e:
            raise ProviderError(
                "retryable", f"{self.name}: the request to {self.base_url} timed out ({e})"
            ) from e
        except httpx.HTTPError as e:
            raise ProviderError(
                "retryable", f"{self.name}: cannot reach {self.base_url}: {e}"
            ) from e
        finally:
            self._slots.release()

    async def aclose(self) -> None:
        await self.client.aclose()


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
