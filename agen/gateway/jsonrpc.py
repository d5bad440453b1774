"""The JSON-RPC request the Gateway hands to a2a-sdk, read and checked first, and its error answers.

a2a-sdk's dispatcher parses the body itself (any encoding Python's json guesses, NaN, integers of
any size) and answers what breaks its parsing with -32603 and the exception's text, logging a
traceback. The Gateway reads the body first and refuses a bad one here, with a fixed message and
the request's own id, so a client error is the client's, in one log line:

* HTTP 415: a Content-Type other than JSON, or a body that is not UTF-8 (UTF-16, Latin-1);
* HTTP 413: a body over 28 MiB (a message's files, as SubmitTask takes them), or over
  ``AGEN_API_MAX_BODY_BYTES`` when that is set higher;
* -32700 parse error: not JSON (a syntax error, NaN or Infinity, nesting past the parser's depth);
* -32600 invalid request: not one JSON-RPC 2.0 request object (a batch, ``jsonrpc`` not "2.0",
  ``method`` not a string, ``id`` not a string, integer or null, a member besides jsonrpc, id,
  method and params), or ``params`` not an object;
* -32601 method not found;
* -32602 invalid params: the params do not fit the method's schema, an integer out of its range,
  text holding a lone UTF-16 surrogate; ``data.field`` names where;
* -32603 internal error, only for a failure nobody planned: the message holds an id, and the log
  holds the same id with the traceback (agen.errors.internal_error).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from google.protobuf.json_format import ParseDict
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.types import Message

from agen.api.jsonbody import lone_surrogate, strict_loads
from agen.errors import InvalidError
from agen.wire.limits import (
    DEFAULT_MAX_BODY_BYTES,
    MAX_BODY_ENV,
    TASK_FILES_BODY_BYTES,
    env_bytes,
    human,
)

log = logging.getLogger("agen.gateway")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603
REFUSED = -32000
"""A refusal that carries its own HTTP status (403, 404, 429, 503): JSON-RPC's server-error range."""

MESSAGES = {
    PARSE_ERROR: "parse error: the body is not a JSON document",
    INVALID_REQUEST: "invalid request: the body is not one JSON-RPC 2.0 request object",
    METHOD_NOT_FOUND: "method not found: the Gateway serves the A2A methods (message/send, "
    "message/stream, tasks/get, tasks/cancel, and their A2A 1.0 names)",
    INVALID_PARAMS: "invalid params: the params do not fit the method",
}
_MEMBERS = frozenset({"jsonrpc", "id", "method", "params"})
INT32_MAX = 2**31 - 1
JSON_SAFE_INT = 2**53 - 1
"""Integers past this are not exact in most JSON readers (I-JSON); protobuf's Struct holds doubles."""
_INT32_FIELDS = frozenset({"historyLength"})


@dataclass
class BadRequest(Exception):
    """A request refused before a2a-sdk sees it: what the caller gets and what the log line says."""

    code: int
    request_id: str | int | None = None
    field: str | None = None
    status: int = 200
    message: str | None = None
    detail: str = ""  # for the log only

    def response(self) -> JSONResponse:
        error: dict[str, Any] = {"code": self.code, "message": self.message or MESSAGES[self.code]}
        if self.field is not None:
            error["data"] = {"field": self.field}
        return JSONResponse(
            {"jsonrpc": "2.0", "id": self.request_id, "error": error}, status_code=self.status
        )


def refusal_body(request_id: str | int | None, message: str, code: int = REFUSED) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def max_body_bytes() -> int:
    """The API's cap, or SubmitTask's when higher: a message carries its files (raw parts) in the
    body, base64, up to the 20 MiB a task may be given (agen.domain.attachments)."""
    return max(env_bytes(MAX_BODY_ENV, DEFAULT_MAX_BODY_BYTES), TASK_FILES_BODY_BYTES)


def _is_json(content_type: str) -> bool:
    media, _, params = content_type.partition(";")
    media = media.strip().lower()
    if media != "application/json" and not (
        media.startswith("application/") and media.endswith("+json")
    ):
        return False
    charset = [p.split("=", 1)[1].strip().strip('"').lower() for p in params.split(";") if "=" in p]
    return all(c in ("utf-8", "utf8") for c in charset)


async def _body(request: Request, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise BadRequest(
                    INVALID_REQUEST,
                    status=413,
                    message=f"the body is over {human(limit)} ({MAX_BODY_ENV} raises the limit)",
                )
    except ClientDisconnect:
        raise BadRequest(INVALID_REQUEST, detail="the client went away mid-body") from None
    return b"".join(chunks)


def _request_id(payload: Any) -> str | int | None:
    rid = payload.get("id") if isinstance(payload, dict) else None
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


def _out_of_range(value: Any, path: str, key: str = "") -> str | None:
    """The path of the first integer that protobuf or a JSON reader cannot hold exactly."""
    stack: list[tuple[str, str, Any]] = [(path, key, value)]
    while stack:
        where, name, item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool):
            bound = INT32_MAX if name in _INT32_FIELDS else JSON_SAFE_INT
            if not -bound <= item <= bound:
                return where
        elif isinstance(item, dict):
            stack.extend((f"{where}.{k}", k, v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", name, v) for i, v in enumerate(item))
    return None


def _check_params(method: str, payload: dict[str, Any], request_id: str | int | None) -> None:
    """The params against the schema a2a-sdk will read them with (v0.3: its pydantic models; 1.0:
    the protobuf request), so a mismatch is -32602 here rather than a traceback there."""
    v03: Mapping[str, type[BaseModel]] = JSONRPC03Adapter.METHOD_TO_MODEL
    if method in v03:
        try:
            v03[method].model_validate(payload)
        except ValidationError as e:
            loc = e.errors()[0]["loc"]
            field = ".".join(str(x) for x in loc)
            code = INVALID_PARAMS if loc[:1] == ("params",) and len(loc) > 1 else INVALID_REQUEST
            raise BadRequest(code, request_id, field=field, detail=str(e)) from None
        return
    model = JsonRpcDispatcher.METHOD_TO_MODEL[method]
    params = payload.get("params", {})
    if not isinstance(params, dict):
        raise BadRequest(INVALID_REQUEST, request_id, field="params")
    try:
        ParseDict(params, model(), ignore_unknown_fields=True)
    except Exception as e:  # protobuf's ParseError, or a value its fields cannot hold
        raise BadRequest(INVALID_PARAMS, request_id, field="params", detail=str(e)) from None


async def read_request(request: Request) -> tuple[dict[str, Any], bytes]:
    """The JSON-RPC request object and the bytes to hand on (re-encoded: valid UTF-8 JSON that
    a2a-sdk parses exactly as it was checked here), or BadRequest."""
    content_type = request.headers.get("content-type")
    if content_type is not None and not _is_json(content_type):
        raise BadRequest(
            INVALID_REQUEST,
            status=415,
            message="unsupported media type: send Content-Type: application/json, UTF-8",
            detail=f"Content-Type {content_type[:80]!r}",
        )
    raw = await _body(request, max_body_bytes())
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(
            INVALID_REQUEST,
            status=415,
            message="unsupported media type: the body must be UTF-8 JSON",
            detail="a body that is not UTF-8",
        ) from None
    try:
        payload = strict_loads(text)
    except (json.JSONDecodeError, RecursionError, InvalidError) as e:
        raise BadRequest(PARSE_ERROR, detail=type(e).__name__) from None
    request_id = _request_id(payload)
    if not isinstance(payload, dict):
        raise BadRequest(INVALID_REQUEST, detail="a batch or a bare value")
    where = lone_surrogate(payload)
    if where is not None:
        code = INVALID_PARAMS if where.startswith("params") else INVALID_REQUEST
        raise BadRequest(code, request_id, field=where, detail="a lone UTF-16 surrogate")
    rid = payload.get("id")
    if (
        payload.get("jsonrpc") != "2.0"
        or not isinstance(payload.get("method"), str)
        or (rid is not None and (isinstance(rid, bool) or not isinstance(rid, str | int)))
        or not isinstance(payload.get("params", {}), dict)
        or not set(payload) <= _MEMBERS
    ):
        raise BadRequest(INVALID_REQUEST, request_id, detail="not a JSON-RPC 2.0 request")
    where = _out_of_range(payload.get("params", {}), "params")
    if where is not None:
        raise BadRequest(INVALID_PARAMS, request_id, field=where, detail="an integer out of range")
    method = payload["method"]
    if (
        method not in JSONRPC03Adapter.METHOD_TO_MODEL
        and method not in JsonRpcDispatcher.METHOD_TO_MODEL
    ):
        raise BadRequest(METHOD_NOT_FOUND, request_id, detail=f"method {method[:80]!r}")
    _check_params(method, payload, request_id)
    try:
        return payload, json.dumps(payload, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise BadRequest(PARSE_ERROR, request_id, detail="nested too deeply") from None


def replayed(request: Request, body: bytes) -> Request:
    """``request`` with ``body`` as its body; later receives (a disconnect) come from the client."""
    sent = False
    original = request.receive

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return await original()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(request.scope, receive)
