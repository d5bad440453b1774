"""The OpenAPI document, generated from the registry's pydantic models."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic.json_schema import models_json_schema

from agen.api.registry import RPCS

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {"type": "object"},
            },
            "required": ["code", "message", "details"],
        }
    },
    "required": ["error"],
}


@cache
def openapi_document() -> dict[str, Any]:
    models = {m for rpc in RPCS.values() for m in (rpc.request, rpc.response)}
    keyed, defs = models_json_schema(
        [(m, "validation") for m in sorted(models, key=lambda m: m.__name__)],
        ref_template="#/components/schemas/{model}",
    )
    paths: dict[str, Any] = {}
    for rpc in RPCS.values():
        paths[rpc.path] = {
            "post": {
                "operationId": rpc.name,
                "summary": rpc.doc,
                "x-agen-scope": rpc.scope,
                "security": [{"bearer": []}],
                # An empty body reads as {}: only methods with required fields require a body.
                "requestBody": {
                    "required": bool(rpc.request.model_json_schema().get("required")),
                    "content": {"application/json": {"schema": keyed[(rpc.request, "validation")]}},
                },
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {
                            "application/json": {"schema": keyed[(rpc.response, "validation")]}
                        },
                    },
                    "default": {
                        "description": "Error",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                        },
                    },
                },
            }
        }
    schemas = dict(defs.get("$defs", {}))
    schemas["Error"] = ERROR_SCHEMA
    return {
        "openapi": "3.1.0",
        "info": {"title": "agen Hub API", "version": "1"},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
