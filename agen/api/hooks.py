"""Non-RPC doors of the Hub: webhook triggers and the server-sent event stream.

``POST /hooks/<ns>/<deployment>/<trigger>`` reads at most 1 MiB + 1 byte of body (413 beyond)
and answers with the documented status; ``GET /api/v1/events`` streams the event log with
``id: <seq>`` and resumes after ``Last-Event-ID`` (or ``?after=``), so a client reconnecting
to a restarted Hub neither loses nor repeats an event. A ``type`` filter that names live events
(``run.delta``, ``model.``, ``tool.``, or ``*``: agen.domain.live) adds them as they happen, without
an ``id`` (they have no place in the log, so they never move a reconnecting client's cursor).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agen.domain.live import LIVE_TYPES, LiveEvent, merge
from agen.errors import AgenError, InvalidError
from agen.hub.events.log import EventFilter, list_events, parse_labels, type_matches
from agen.hub.service import Hub
from agen.hub.triggers.verify import MAX_BODY_BYTES
from agen.hub.triggers.webhook import SecretResolver, env_secrets, receive


async def read_limited(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The body, stopping one byte past ``limit`` (so an oversize body is never held whole).

    A client that hangs up before sending the whole body is an ordinary event (a killed curl, a
    closed laptop), not a Hub fault: it is an AgenError answered like any bad request (to nobody),
    never a traceback in `agen up`'s output."""
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                break
    except ClientDisconnect:
        raise InvalidError(
            f"{request.url.path}: the client went away before sending the whole request body"
        ) from None
    return b"".join(chunks)[: limit + 1]


def sse_frame(seq: int, event_type: str, data: Any) -> ServerSentEvent:
    """One SSE frame: ``id`` is the event's seq (what Last-Event-ID resumes after)."""
    return ServerSentEvent(
        data=json.dumps(data, separators=(",", ":")), event=event_type, id=str(seq)
    )


def hook_routes(hub: Hub, secrets: SecretResolver = env_secrets) -> list[Route]:
    async def webhook(request: Request) -> Response:
        p = request.path_params
        headers = dict(request.headers)
        try:
            body = await read_limited(request)
            result = await hub.store.write(
                lambda tx: receive(
                    tx, p["ns"], p["deployment"], p["trigger"], headers, body, secrets, hub.clock()
                )
            )
        except AgenError as e:
            return JSONResponse(e.to_dict(), status_code=e.http_status)
        if result.status == 202 or result.status == 200:
            hub.work.notify()
        return JSONResponse(result.body, status_code=result.status)

    async def events(request: Request) -> Response:
        q = request.query_params
        try:
            principal = await hub.auth.caller(request.headers, hub.clock())
            principal.require("viewer", "reading the event stream")
            wanted = q.getlist("namespace") or q.getlist("n")
            for ns in wanted:
                principal.require_namespace(ns)
            namespaces = wanted or sorted(principal.namespaces)
            flt = EventFilter(
                types=tuple(q.getlist("type")),
                labels=parse_labels(q.getlist("label")),
                deployment=q.get("deployment"),
                severity=q.get("severity"),
                task_id=q.get("task"),
            )
            raw_after = request.headers.get("last-event-id") or q.get("after") or "0"
            try:
                after = int(raw_after)
            except ValueError:
                raise InvalidError(
                    f"Last-Event-ID / after must be an event seq (got {raw_after!r})"
                ) from None
        except AgenError as e:
            return JSONResponse(e.to_dict(), status_code=e.http_status)

        async def stored() -> AsyncIterator[ServerSentEvent]:
            cursor = after
            while not hub.draining:
                page = await list_events(
                    hub.store, namespaces, after=cursor, flt=flt, limit=200, wait_s=15
                )
                for event in page.events:
                    yield sse_frame(int(event["seq"]), str(event["type"]), event)
                cursor = page.cursor

        if not flt.types or not any(type_matches(t, flt.types) for t in LIVE_TYPES):
            return EventSourceResponse(stored(), ping=15)
        allowed = set(namespaces)

        def wants(e: LiveEvent) -> bool:
            # no namespaces: a caller of every namespace, as list_events reads it
            return (not allowed or e.namespace in allowed) and flt.matches(e.to_dict())

        async def both() -> AsyncIterator[ServerSentEvent]:
            with hub.live.subscribe(wants) as sub:

                async def live() -> AsyncIterator[ServerSentEvent]:
                    async for e in sub:
                        data = json.dumps(e.to_dict(), separators=(",", ":"))
                        yield ServerSentEvent(data=data, event=e.type)

                async for frame in merge(stored(), live()):
                    yield frame

        return EventSourceResponse(both(), ping=15)

    return [
        Route("/hooks/{ns}/{deployment}/{trigger}", webhook, methods=["POST"]),
        Route("/api/v1/events", events, methods=["GET"]),
    ]
