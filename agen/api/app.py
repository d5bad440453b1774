"""The Hub's HTTP door: ``POST /v1/<Method>`` per registered RPC, OpenAPI, health and ready.

Every error leaves as ``{"error": {"code", "message", "details"}}`` with the status of its
AgenError class. While the Hub drains, /health stays 200 (``shutting_down``), /ready is 503
and RPCs that start work answer 503 with Retry-After (seed 001, graceful drain). While the store cannot
take writes, /health is 503 ``degraded`` with the store's error.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agen.api.dispatch import RETRY_AFTER_S, dispatch
from agen.api.hooks import hook_routes
from agen.api.openapi import openapi_document
from agen.api.registry import RPCS, Rpc
from agen.errors import AgenError, InvalidError, NotFoundError, UnavailableError
from agen.hub.service import Hub

log = logging.getLogger("agen.api")


def _error(e: AgenError) -> JSONResponse:
    headers = {}
    if isinstance(e, UnavailableError) and e.details.get("retry_after"):
        headers["Retry-After"] = str(e.details["retry_after"])
    elif e.details.get("retry_after_s"):  # admission refusals (429) and budget holds (503)
        headers["Retry-After"] = str(e.details["retry_after_s"])
    return JSONResponse(e.to_dict(), status_code=e.http_status, headers=headers)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _invalid(rpc: Rpc[Any, Any], e: ValidationError) -> InvalidError:
    problems = [f"{'.'.join(str(x) for x in err['loc']) or '(body)'}: {err['msg']}" for err in e.errors()]
    return InvalidError(f"{rpc.name}: invalid request: {'; '.join(problems)}", problems=problems)


def create_app(hub: Hub) -> Starlette:
    async def call(request: Request) -> Response:
        name = request.path_params["method"]
        rpc = RPCS.get(name)
        try:
            if rpc is None:
                raise NotFoundError(f"no API method {name!r}; GET /openapi.json lists them", method=name)
            principal = await hub.auth.authenticate(_bearer(request), hub.clock())
            body = await request.body()
            try:
                payload = json.loads(body) if body else {}
            except json.JSONDecodeError as e:
                raise InvalidError(f"{name}: body is not valid JSON: {e.msg}") from None
            try:
                req = rpc.request.model_validate(payload)
            except ValidationError as e:
                raise _invalid(rpc, e) from None
            result = await dispatch(hub, principal, rpc, req)
            return Response(result.model_dump_json(), media_type="application/json")
        except AgenError as e:
            return _error(e)
        except Exception as e:  # never a traceback to a client; the log keeps it
            log.exception("%s failed", name)
            return _error(AgenError(f"{name} failed inside the Hub: {type(e).__name__}: {e}"))

    async def health(request: Request) -> Response:
        # A store that cannot take writes (full disk, read-only file, stopped writer) makes the Hub useless for
        # new work while it still answers: say "degraded" with 503, so probes and `agen status` see it.
        store = hub.store.health()
        status = "degraded" if not store.ok else "shutting_down" if hub.draining else "ok"
        return JSONResponse(
            {"status": status, "shutting_down": hub.draining, "in_flight": hub.in_flight(), "store": store.to_dict()},
            status_code=200 if store.ok else 503,
        )

    async def ready(request: Request) -> Response:
        if hub.draining:
            return JSONResponse(
                {"ready": False, "draining": True, "reason": "draining"}, status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        return JSONResponse({"ready": True, "draining": False})

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document())

    return Starlette(
        routes=[
            Route("/v1/{method}", call, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            Route("/ready", ready, methods=["GET"]),
            Route("/openapi.json", openapi, methods=["GET"]),
            *hook_routes(hub),  # webhooks and the SSE event stream (agen.api.hooks)
        ]
    )
