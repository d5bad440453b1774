"""The HTTP side every API provider shares: one httpx2 client per account, at most
``max_in_flight`` calls at once (the pool has a connection per allowed call, so no request waits
inside httpx), transport failures mapped to retryable ProviderErrors, error statuses mapped to
ProviderErrors, and streamed answers read as server-sent events of JSON. What differs between the
APIs (a 400 that means an account problem, where the retry delay is, the events that mark an error
or the end) is given as a parameter; each API's own shapes stay in its module.

The client is httpx2 (the httpx fork mcp is built on, a dependency already), for its server-sent
events: ``sse_events`` reads a streamed answer with ``httpx2.EventSource`` (SSE framing is not
hand-written) and yields each event's name and data; the provider modules read their API's events
from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Protocol

import httpx2

from agen.runner.providers.base import (
    Delta,
    DeltaSink,
    ModelProvider,
    ProviderError,
    classify_status,
)

# Requests in flight per provider (x-agen/harness.json maxInFlight). More runs wait on a semaphore,
# never in httpcore's pool, which has a connection for each request let through: the pool's
# request-to-connection assignment is O(queued x connections) per event, which made 1,000 runs
# waiting on one provider CPU-bound (~45 s for 1,000 half-second calls) and pool-timed-out the rest.
MAX_IN_FLIGHT = 100

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


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


async def error_text(response: httpx2.Response) -> str:
    """The first 2,000 characters of an error answer's body (a streamed one is read first)."""
    await response.aread()
    return response.text[:2000]


def error_field(event: dict[str, Any]) -> str | None:
    """An event's ``error`` member, as OpenAI-compatible servers and Gemini break off a stream."""
    error = event.get("error")
    return json.dumps(error)[:500] if error else None


class StreamAssembler(Protocol):
    """One API's streamed events in, the answer they add up to out (each provider module has one);
    ``HttpProvider.stream`` feeds it."""

    finished: bool
    """The answer is whole: a stream that ends before this is retryable."""

    def add(self, event: dict[str, Any]) -> Iterable[Delta]:
        """Take one event; the pieces of text or thinking it carries, to show as they come."""
        ...


class HttpProvider(ModelProvider):
    """A provider spoken over HTTP through one Endpoint (set by the subclass's constructor): the
    non-streamed call, the streamed one and the mapping of error statuses, written once."""

    endpoint: Endpoint
    base_url: str
    account_400: tuple[str, ...] = ()
    """Words (any case) by which a 400 answer says the account is the problem (an empty balance,
    a bad key): an account error then, where classify_status would say another model may do."""

    def retry_after(self, response: httpx2.Response, text: str) -> float | None:
        """How long to wait before asking again: the Retry-After header (an API that says it
        elsewhere too overrides this)."""
        return parse_retry_after(response.headers.get("retry-after"))

    def status_error(self, response: httpx2.Response, text: str) -> ProviderError:
        """An error answer (``text``: the start of its body) as the ProviderError its status
        means: 429 and 5xx retryable after the delay asked, 401/402/403 account errors."""
        status = response.status_code
        kind = classify_status(status, text)
        if status == 400 and any(word in text.lower() for word in self.account_400):
            kind = "account"
        return ProviderError(
            kind,
            f"{self.name} answered HTTP {status} from {self.base_url}: {text[:500]}",
            status=status,
            retry_after_s=self.retry_after(response, text),
        )

    async def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON answer to one call without streaming."""
        resp = await self.endpoint.post(path, body)
        if resp.status_code >= 400:
            raise self.status_error(resp, resp.text[:2000])
        try:
            data: dict[str, Any] = resp.json()
        except ValueError as e:
            raise ProviderError(
                "retryable", f"{self.name}: the answer from {self.base_url} is not JSON"
            ) from e
        return data

    async def stream(
        self,
        path: str,
        body: dict[str, Any],
        assembler: StreamAssembler,
        on_delta: DeltaSink,
        *,
        done: str | None = None,
        stop_when_finished: bool = False,
        broke_off: Callable[[dict[str, Any]], str | None] = error_field,
    ) -> None:
        """One streamed call: each server-sent event's JSON object into ``assembler``, its deltas
        to ``on_delta`` as they come. ``done``: a data line that ends the stream (OpenAI's
        ``[DONE]``); ``stop_when_finished``: the event that finishes the answer is the last one
        (Anthropic's ``message_stop``); ``broke_off``: an event that reports an error mid-stream,
        described. Such an event, an event that is not JSON, or a stream that ends before the
        answer is finished, is retryable."""
        async with self.endpoint.stream(path, body) as resp:
            if resp.status_code >= 400:
                raise self.status_error(resp, await error_text(resp))
            async for _name, data in sse_events(resp):
                if done is not None and data.strip() == done:
                    break
                try:
                    event = json.loads(data)
                except ValueError as e:
                    raise ProviderError(
                        "retryable",
                        f"{self.name}: a streamed event from {self.base_url} is not JSON",
                    ) from e
                if not isinstance(event, dict):
                    continue
                problem = broke_off(event)
                if problem is not None:
                    raise ProviderError(
                        "retryable",
                        f"{self.name}: the stream from {self.base_url} broke off: {problem}",
                    )
                for delta in assembler.add(event):
                    await on_delta(delta)
                if stop_when_finished and assembler.finished:
                    break
        if not assembler.finished:
            raise ProviderError(
                "retryable",
                f"{self.name}: the stream from {self.base_url} ended before the answer did",
            )

    @property
    def max_in_flight(self) -> int:
        return self.endpoint.max_in_flight

    @property
    def waiting(self) -> int:
        """Calls waiting for one of the max_in_flight slots."""
        return self.endpoint.waiting

    async def aclose(self) -> None:
        await self.endpoint.aclose()
