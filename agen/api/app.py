"""The Hub's HTTP door: ``POST /v1/<Method>`` per registered RPC, OpenAPI, ``/mcp``, health and ready.

Every error leaves as ``{"error": {"code", "message", "details"}}`` with the status of its
AgenError class. While the Hub drains, /health stays 200 (``shutting_down``), /ready is 503
and RPCs that start work answer 503 with Retry-After (seed 001, graceful drain). While the store cannot
take writes, /health is 503 ``degraded`` with the store's error.

A bad request is always a 4xx in that shape, never a 500: the token and its scope are checked
before the body is read (a viewer gets 403 whatever it sends), the body is capped (413), must be
UTF-8 JSON without lone surrogates or NaN, not nested past the parser's depth limit, and is
validated strictly (``true`` is not a number, ``"5"`` is not an integer).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agen.api.dispatch import RETRY_AFTER_S, authorize, dispatch
from agen.api.hooks import hook_routes, read_limited
from agen.api.jsonbody import lone_surrogate, strict_loads
from agen.api.openapi import openapi_document
from agen.api.peer_cert import peer_certificate
from agen.api.registry import RPCS, Rpc
from agen.errors import (
    AgenError,
    InvalidError,
    NotFoundError,
    TooLargeError,
    UnavailableError,
    internal_error,
)
from agen.hub.service import Hub
from agen.otel.ids import header_traceparent
from agen.wire.limits import (
    DEFAULT_MAX_BODY_BYTES,
    MAX_BODY_ENV,
    TASK_FILES_BODY_BYTES,
    BundleLimits,
    env_bytes,
    human,
)

log = logging.getLogger("agen.api")


def _error(e: AgenError) -> JSONResponse:
    headers = {}
    if isinstance(e, UnavailableError) and e.details.get("retry_after"):
        headers["Retry-After"] = str(e.details["retry_after"])
    elif e.details.get("retry_after_s"):  # admission refusals (429) and budget holds (503)
        headers["Retry-After"] = str(e.details["retry_after_s"])
    return JSONResponse(e.to_dict(), status_code=e.http_status, headers=headers)


def _invalid(rpc: Rpc[Any, Any], e: ValidationError) -> InvalidError:
    problems = [
        f"{'.'.join(str(x) for x in err['loc']) or '(body)'}: {err['msg']}" for err in e.errors()
    ]
    return InvalidError(f"{rpc.name}: invalid request: {'; '.join(problems)}", problems=problems)


def parse_body(name: str, body: bytes) -> Any:
    """The request body as JSON (empty is ``{}``), or an InvalidError saying what is wrong with it."""
    if not body.strip(b" \t\r\n"):  # JSON's whitespace only: a lone \x0b is not an empty body
        return {}
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidError(
            f"{name}: body is not UTF-8 (bad byte at offset {e.start}); send UTF-8 JSON"
        ) from None
    try:
        payload = strict_loads(text)
    except json.JSONDecodeError as e:
        raise InvalidError(
            f"{name}: body is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    except RecursionError:
        raise InvalidError(f"{name}: body is nested too deeply to be a request") from None
    where = lone_surrogate(payload)
    if where is not None:
        raise InvalidError(
            f"{name}: {where}: text holds a lone UTF-16 surrogate; send valid Unicode", field=where
        )
    return payload


def max_body_bytes() -> int:
    """The /v1 request body cap: AGEN_API_MAX_BODY_BYTES, default 1 MiB."""
    return env_bytes(MAX_BODY_ENV, DEFAULT_MAX_BODY_BYTES)


async def _read_body(request: Request, rpc: Rpc[Any, Any], limit: int) -> bytes:
    """The body, refused with 413 past ``limit`` without holding more than limit + 1 bytes."""
    declared = request.headers.get("content-length", "")
    too_large = TooLargeError(
        f"{rpc.name}: request body is over {human(limit)}; "
        + (
            "the bundle is too large (AGEN_BUNDLE_MAX_BYTES raises it on the Hub)"
            if rpc.bundle_body
            else f"{MAX_BODY_ENV} on the Hub raises the limit"
        ),
        limit=limit,
    )
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    body = await read_limited(request, limit)
    if len(body) > limit:
        raise too_large
    return body


def create_app(hub: Hub, max_body: int | None = None) -> Starlette:
    body_cap = max_body if max_body is not None else max_body_bytes()
    bundle_cap = max(body_cap, BundleLimits.from_env().request_bytes)
    file_cap = max(body_cap, TASK_FILES_BODY_BYTES)

    async def call(request: Request) -> Response:
        name = request.path_params["method"]
        rpc = RPCS.get(name)
        try:
            if rpc is None:
                raise NotFoundError(
                    f"no API method {name!r}; GET /openapi.json lists them", method=name
                )
            principal = await hub.auth.caller(
                request.headers, hub.clock(), peer_certificate(request.scope)
            )
            authorize(principal, rpc)  # before the body: a caller without scope gets 403
            cap = bundle_cap if rpc.bundle_body else file_cap if rpc.file_body else body_cap
            body = await _read_body(request, rpc, cap)
            payload = parse_body(name, body)
            if (
                rpc.traceparent_header
                and isinstance(payload, dict)
                and "traceparent" not in payload
            ):
                tp = header_traceparent(request.headers)  # W3C: the run joins the caller's trace
                if tp:
                    payload["traceparent"] = tp
            try:
                req = rpc.request.model_validate(payload, strict=True)
            except ValidationError as e:
                raise _invalid(rpc, e) from None
            result = await dispatch(hub, principal, rpc, req)
            return Response(result.model_dump_json(), media_type="application/json")
        except AgenError as e:
            return _error(e)
        except Exception:  # never exception text to a client: an id it can quote; the log keeps it
            return _error(internal_error(log, name))

    async def health(request: Request) -> Response:
        # A store that cannot take writes (full disk, read-only file, stopped writer) makes the Hub useless for
        # new work while it still answers: say "degraded" with 503, so probes and `agen status` see it.
        store = hub.store.health()
        status = "degraded" if not store.ok else "shutting_down" if hub.draining else "ok"
        body: dict[str, Any] = {
            "status": status,
            "shutting_down": hub.draining,
            "in_flight": hub.in_flight(),
            "store": store.to_dict(),
        }
        if (
            hub.otlp_stats is not None
        ):  # OTLP trace export (agen.otel): exported, dropped, failed, queued
            body["otlp"] = hub.otlp_stats()
        return JSONResponse(body, status_code=200 if store.ok else 503)

    async def ready(request: Request) -> Response:
        if hub.draining:
            return JSONResponse(
                {"ready": False, "draining": True, "reason": "draining"},
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        return JSONResponse({"ready": True, "draining": False})

    async def metrics(request: Request) -> Response:
        """Counters and histograms for Prometheus (agen.otel.prometheus); a viewer token, as
        GetMetrics."""
        from agen.otel.prometheus import CONTENT_TYPE, exposition
        from agen.wire.observe import GetMetricsRequest, OtlpStats

        try:
            principal = await hub.auth.caller(request.headers, hub.clock())
            principal.require("viewer", "GET /metrics")
            try:
                req = GetMetricsRequest(namespace=request.query_params.get("namespace", "default"))
            except ValidationError as e:
                raise _invalid(RPCS["GetMetrics"], e) from None
            principal.require_namespace(req.namespace)
            counters = hub.fleet_counters()
            await counters.catch_up()
            otlp = OtlpStats(**hub.otlp_stats()) if hub.otlp_stats else None
            return Response(
                exposition(counters.totals, req.namespace, otlp), media_type=CONTENT_TYPE
            )
        except AgenError as e:
            return _error(e)

    async def ca_pem(request: Request) -> Response:
        """The Hub CA's certificate (public), for clients that pin its hash; 404 on a plain-HTTP Hub."""
        if hub.tls_ca_pem is None:
            return _error(NotFoundError("this Hub does not serve TLS (no --tls): it has no CA"))
        return Response(hub.tls_ca_pem, media_type="application/x-pem-file")

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def http_error(request: Request, exc: Exception) -> Response:
        """Routing errors (unknown path, wrong method) in the same error shape as everything else."""
        assert isinstance(exc, HTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "invalid")
        message = f"{request.method} {request.url.path}: {exc.detail}"
        if exc.status_code == 405:
            message += "; API methods are POST /v1/<Method> (GET /openapi.json lists them)"
        body = {"error": {"code": code, "message": message, "details": {}}}
        return JSONResponse(body, status_code=exc.status_code, headers=dict(exc.headers or {}))

    from agen.api.mcp_endpoint import McpEndpoint

    mcp_endpoint = McpEndpoint(hub)
    app = Starlette(
        exception_handlers={HTTPException: http_error},
        routes=[
            Route("/v1/{method}", call, methods=["POST"]),
            Route("/mcp", mcp_endpoint),  # MCP over streamable HTTP (agen.api.mcp_endpoint)
            Route("/health", health, methods=["GET"]),
            Route("/ready", ready, methods=["GET"]),
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/ca.pem", ca_pem, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
            *hook_routes(hub),  # webhooks and the SSE event stream (agen.api.hooks)
        ],
    )
    app.state.mcp_endpoint = mcp_endpoint  # its session manager runs in a task: close() stops it
    return app
