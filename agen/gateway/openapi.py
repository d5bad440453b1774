"""The Gateway's OpenAPI document (``GET /openapi.json``): the A2A v0.3 JSON-RPC methods agen serves,
as agen accepts them.

A2A's own schema allows more than agen takes (file parts by URI, continuing a task by taskId,
push notification configs); a call using those gets a JSON-RPC error that says "not supported
yet". File parts with bytes and data parts are taken (agen.domain.attachments) but not described
here: whether a file is taken depends on its bytes (an image, a PDF or text), which no schema
states. This document states agen's subset, so a request valid by it is one agen runs: the
conformance test (tests/e2e/test_api_fuzz.py) sends generated ones and expects no client error.
A JSON-RPC error travels on HTTP 200, as JSON-RPC over HTTP does; refusals that carry their own
status (401, 403, 404, 413, 415, 429, 503) are listed as such.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from agen.gateway.jsonrpc import INT32_MAX
from agen.otel.ids import TRACEPARENT_PATTERN
from agen.wire.common import NAME_PATTERN

_TEXT = {"type": "string", "pattern": r"\S", "maxLength": 10_000}
_ID = {"type": "string", "minLength": 1, "maxLength": 200}
_METADATA: dict[str, Any] = {
    "type": "object",
    "description": "free-form; agen reads agen.labels, agen.model_tier, traceparent and "
    "agen.parent_run_id (an agent's call token only)",
    "properties": {
        "agen.labels": {
            "type": "object",
            "additionalProperties": {"type": "string", "maxLength": 200},
        },
        "agen.model_tier": {"enum": ["low", "medium", "high", "xhigh", "max"]},
        "traceparent": {"type": "string", "pattern": TRACEPARENT_PATTERN},
        "agen.parent_run_id": {"type": "string"},
    },
}
_MESSAGE = {
    "type": "object",
    "properties": {
        "kind": {"const": "message"},
        "role": {"enum": ["user", "agent"]},
        "messageId": _ID,
        "contextId": _ID,
        "parts": {
            "type": "array",
            "minItems": 1,
            "maxItems": 8,
            "items": {
                "type": "object",
                "properties": {"kind": {"const": "text"}, "text": _TEXT},
                "required": ["kind", "text"],
                "additionalProperties": False,
            },
        },
        "metadata": _METADATA,
    },
    "required": ["role", "messageId", "parts"],
    "additionalProperties": False,
}
_HISTORY = {"type": "integer", "minimum": 0, "maximum": INT32_MAX}
_SEND_PARAMS = {
    "type": "object",
    "properties": {
        "message": _MESSAGE,
        "configuration": {
            "type": "object",
            "properties": {
                "blocking": {"type": "boolean"},
                "historyLength": _HISTORY,
                "acceptedOutputModes": {"type": "array", "items": {"type": "string"}},
            },
            "additionalProperties": False,
        },
        "metadata": _METADATA,
    },
    "required": ["message"],
    "additionalProperties": False,
}
_TASK_PARAMS = {
    "type": "object",
    "properties": {"id": _ID, "historyLength": _HISTORY},
    "required": ["id"],
    "additionalProperties": False,
}
METHODS: dict[str, dict[str, Any]] = {
    "message/send": _SEND_PARAMS,
    "message/stream": _SEND_PARAMS,
    "tasks/get": _TASK_PARAMS,
    "tasks/cancel": {**_TASK_PARAMS, "properties": {"id": _ID}},
}


def _request(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": {"anyOf": [_ID, {"type": "integer", "minimum": 0, "maximum": 2**53 - 1}]},
            "method": {"const": method},
            "params": params,
        },
        "required": ["jsonrpc", "id", "method", "params"],
        "additionalProperties": False,
    }


_JSONRPC_RESPONSE = {
    "type": "object",
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer", "null"]},
        "result": {},
        "error": {
            "type": "object",
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
            "required": ["code", "message"],
        },
    },
    "required": ["jsonrpc", "id"],
}
_AGEN_ERROR = {"type": "object", "properties": {"error": {"type": "object"}}, "required": ["error"]}


@cache
def gateway_openapi() -> dict[str, Any]:
    name = {"type": "string", "pattern": NAME_PATTERN}
    refused = {"application/json": {"schema": {"anyOf": [_JSONRPC_RESPONSE, _AGEN_ERROR]}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "agen A2A Gateway (JSON-RPC, A2A v0.3 methods)", "version": "1"},
        "paths": {
            "/a2a/{ns}/{deployment}": {
                "post": {
                    "operationId": "A2ACall",
                    "summary": "One A2A JSON-RPC call to a deployment",
                    "security": [{"bearer": []}],
                    "parameters": [
                        {"name": "ns", "in": "path", "required": True, "schema": name},
                        {"name": "deployment", "in": "path", "required": True, "schema": name},
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"oneOf": [_request(m, p) for m, p in METHODS.items()]}
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "a JSON-RPC response (a result or an error); "
                            "message/stream answers with server-sent events",
                            "content": {
                                "application/json": {"schema": _JSONRPC_RESPONSE},
                                "text/event-stream": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"data": {"type": "string"}},
                                        "required": ["data"],
                                    }
                                },
                            },
                        },
                        **{
                            str(status): {"description": why, "content": refused}
                            for status, why in (
                                (401, "no credential, or one that does not verify"),
                                (403, "the credential may not call this deployment"),
                                (404, "no such agent"),
                                (413, "the body is over the size limit"),
                                (415, "not UTF-8 JSON"),
                                (429, "admission refused the call; Retry-After says when"),
                                (503, "paused, held by its budget, or no instance in time"),
                            )
                        },
                    },
                }
            }
        },
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }
