"""The Gateway's HTTP app: ``/a2a/<ns>/<deployment>`` (JSON-RPC, SSE) and its agent card.

The route authenticates the caller (agen.gateway.auth), names the target on the call context and
hands the request to a2a-sdk's JSON-RPC dispatcher, which serves A2A 1.0 (``SendMessage`` …, with
the ``A2A-Version: 1.0`` header) and the v0.3 method names (``message/send``, ``message/stream``,
``tasks/get``, ``tasks/cancel``) on the same path, so older clients keep working.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agen.api import registry as r
from agen.errors import AgenError, NotFoundError, UnauthenticatedError, internal_error
from agen.gateway.auth import HttpHubLink, HubLink, KeyFetch, KeyRing, authenticate
from agen.gateway.card import card_json
from agen.gateway.handler import CALL_STATE, AgenRequestHandler, Call
from agen.gateway.jsonrpc import (
    INTERNAL_ERROR,
    MESSAGES,
    BadRequest,
    read_request,
    refusal_body,
    replayed,
)
from agen.gateway.openapi import gateway_openapi
from agen.gateway.wake import WaitingCalls, WakePolicy
from agen.wire.agents import ResolveAgentRequest, ResolveAgentResponse
from agen.wire.common import NAME_PATTERN

CARD_PATH = "/.well-known/agent-card.json"
log = logging.getLogger("agen.gateway")
_NAME = re.compile(NAME_PATTERN)


@dataclass(frozen=True)
class GatewayConfig:
    hub_url: str
    public_url: str  # how callers reach this Gateway (the card's endpoint)
    ca_hash: str | None = None
    wake: WakePolicy = field(default_factory=WakePolicy)
    token_keys: KeyFetch | None = None  # the Hub's call-token keys (None: call tokens are refused)
    anonymous_card: CardReader | None = None
    """`agen up` only (seed 000 §10): an agent card asked for without a token from this machine
    (loopback) is read with this, so local tools find agents; the calls still need a token."""


CardReader = Callable[[str, str], Awaitable[ResolveAgentResponse]]
"""(namespace, deployment) -> what the Hub says of it (ResolveAgent)."""


class _ContextBuilder(DefaultServerCallContextBuilder):
    """a2a-sdk's context, plus who calls which deployment (set by the route before dispatch)."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[CALL_STATE] = request.state.agen_call
        return context


def _error(e: AgenError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(e, UnauthenticatedError) else None
    return JSONResponse(e.to_dict(), status_code=e.http_status, headers=headers)


def _refusal(e: HTTPException, request_id: str | int | None) -> JSONResponse:
    """A refusal with its HTTP status (503 + Retry-After for wake-ups), still a JSON-RPC error body
    answering the request's id."""
    body = refusal_body(request_id, str(e.detail))
    return JSONResponse(body, status_code=e.status_code, headers=e.headers)


def _internal(request_id: str | int | None, what: str) -> JSONResponse:
    """An unplanned failure: -32603 with an id the log holds beside the traceback."""
    message = internal_error(log, what).message
    return JSONResponse(refusal_body(request_id, message, INTERNAL_ERROR))


async def _first_event(response: EventSourceResponse, call: Call) -> EventSourceResponse:
    """Run a stream to its first event before answering: a v0.3 message/stream refused before it
    starts (paused, unknown deployment, admission, no instance in time) then gets its HTTP status
    and request id like message/send does, not a 200 with an error event (A2A 1.0's streams are
    started this way by a2a-sdk itself)."""
    events = aiter(response.body_iterator)
    try:
        first = await anext(events)
    except StopAsyncIteration:
        return response
    if call.refusals:
        await _close(events)
        return response

    async def replay() -> AsyncIterator[Any]:
        yield first
        async for event in events:
            yield event

    response.body_iterator = replay()
    return response


async def _close(events: AsyncIterator[Any]) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


def _no_raw_text(response: Response, request_id: str | int | None, what: str) -> Response:
    """a2a-sdk answers an exception it did not expect with -32603 and the exception's text; the
    caller gets an error id instead, and the log that text beside it (the traceback, if any, is
    a2a-sdk's own log record)."""
    if not isinstance(response, JSONResponse):
        return response  # a stream: its events come from our handler, which maps its own errors
    body = json.loads(bytes(response.body))
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or error.get("code") != INTERNAL_ERROR:
        return response
    if str(error.get("message", "")).startswith("internal error "):
        return response  # ours (agen.gateway.handler): logged with its id already
    error_id = secrets.token_hex(6)
    log.error("%s: a2a-sdk answered %r; internal error %s", what, error.get("message"), error_id)
    message = f"internal error {error_id}: the server's log has the details under this id"
    return JSONResponse(refusal_body(request_id, message, INTERNAL_ERROR))


def _anonymous_local(request: Request) -> bool:
    """No credential at all, from this machine's loopback."""
    import ipaddress

    if "authorization" in request.headers or request.client is None:
        return False
    try:
        return ipaddress.ip_address(request.client.host).is_loopback
    except ValueError:
        return False


def create_gateway_app(
    config: GatewayConfig,
    link: HubLink | None = None,
    waiting: WaitingCalls | None = None,
    keys: KeyRing | None = None,
) -> Starlette:
    """``link``: how to reach the Hub (default: its HTTP API at ``config.hub_url``); ``waiting``:
    where the calls waiting for an instance are counted (the Nest reads it: saturation); ``keys``:
    the call-token keys (default: fetched with ``config.token_keys``)."""
    link = link or HttpHubLink(config.hub_url, config.ca_hash)
    keys = keys or KeyRing(config.token_keys)
    dispatcher = JsonRpcDispatcher(
        request_handler=AgenRequestHandler(link, config.wake, waiting=waiting),
        context_builder=_ContextBuilder(),
        enable_v0_3_compat=True,
    )
    base = config.public_url.rstrip("/")

    async def rpc(request: Request) -> Response:
        ns, dep = request.path_params["ns"], request.path_params["deployment"]
        try:
            if not (_NAME.match(ns) and _NAME.match(dep)):  # `/a2a/../x` names no deployment
                raise NotFoundError(f"no A2A agent at {request.url.path[:200]}")
            caller = await authenticate(
                link, request.headers, need="call", target=(ns, dep), keys=keys
            )
        except AgenError as e:
            return _error(e)
        where = f"A2A call to {ns}/{dep}"
        try:
            payload, body = await read_request(request)
        except BadRequest as e:  # the caller's mistake: one line, never a traceback
            log.info(
                "%s: refused (request id %r): %s%s",
                where,
                e.request_id,
                e.message or MESSAGES[e.code],
                f" ({e.detail})" if e.detail else "",
            )
            return e.response()
        request_id = payload.get("id")
        where = f"{where}: {str(payload['method'])[:80]} (request id {request_id!r})"
        call = Call(caller=caller, namespace=ns, deployment=dep)
        forwarded = replayed(request, body)
        forwarded.state.agen_call = call
        try:
            response = await dispatcher.handle_requests(forwarded)
        except HTTPException as e:  # A2A 1.0: a2a-sdk lets an HTTPException through
            return _refusal(e, request_id)
        except Exception:
            return _internal(request_id, where)
        if isinstance(response, EventSourceResponse):
            response = await _first_event(response, call)
        if call.refusals:
            return _refusal(call.refusals[0], request_id)
        return _no_raw_text(response, request_id, where)

    async def card(request: Request) -> Response:
        ns, dep = request.path_params["ns"], request.path_params["deployment"]
        try:
            if config.anonymous_card is not None and _anonymous_local(request):
                info = await config.anonymous_card(ns, dep)
                return JSONResponse(card_json(info, f"{base}/a2a/{ns}/{dep}"))
            caller = await authenticate(
                link, request.headers, need="read", target=(ns, dep), keys=keys
            )
            async with link.client(caller.token) as client:
                info = await client.call(
                    r.ResolveAgent, ResolveAgentRequest(namespace=ns, deployment=dep)
                )
        except AgenError as e:
            return _error(e)
        return JSONResponse(card_json(info, f"{base}/a2a/{ns}/{dep}"))

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def openapi(request: Request) -> Response:
        return JSONResponse(gateway_openapi())

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/a2a/{ns}/{deployment}" + CARD_PATH, card, methods=["GET"]),
            Route("/a2a/{ns}/{deployment}", rpc, methods=["POST"]),
        ]
    )
