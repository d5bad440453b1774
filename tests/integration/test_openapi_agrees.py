"""The OpenAPI document and the validation agree on the rules between fields: a request the Hub
refuses with 400 for its shape is invalid by the document too, and one it accepts is valid by it
(schemathesis's positive-data check, tests/e2e/test_api_fuzz.py, relies on it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import jsonschema

from agen.api import registry as rpc
from agen.api.app import create_app
from agen.api.openapi import openapi_document
from agen.client import Client
from agen.hub.service import Hub
from agen.store import SQLiteStore
from agen.wire.tokens import CreateTokenRequest
from tests.fleet_helpers import files_b64, write_bundle


def schema_of(method: str) -> dict[str, Any]:
    doc = openapi_document()
    schema = doc["paths"][f"/v1/{method}"]["post"]["requestBody"]["content"]["application/json"][
        "schema"
    ]
    return {**schema, "components": doc["components"]}


def valid(method: str, body: dict[str, Any]) -> bool:
    try:
        jsonschema.validate(body, schema_of(method), cls=jsonschema.Draft202012Validator)
    except jsonschema.ValidationError:
        return False
    return True


async def test_the_document_refuses_what_the_hub_refuses_and_accepts_what_it_accepts(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    try:
        hub = Hub(store)
        token = (
            await Client.in_process(hub).call(
                rpc.CreateToken, CreateTokenRequest(scopes=["admin"], name="t")
            )
        ).token
        await Client.in_process(hub).call(
            rpc.CreateDeployment,
            rpc.CreateDeployment.request(files=files_b64(write_bundle(tmp_path / "b", "b"))),
        )
        submitted = await Client.in_process(hub).call(
            rpc.SubmitTask, rpc.SubmitTask.request(deployment="b", input="x")
        )
        task_id = submitted.task.id
        bundle = files_b64(write_bundle(tmp_path / "c", "c"))
        cases: list[tuple[str, dict[str, Any]]] = [
            ("CancelTask", {"id": task_id, "mode": "hard", "grace_period_seconds": 5}),
            ("CancelTask", {"id": task_id, "grace_period_seconds": 5}),
            ("CreateDeployment", {"files": {}, "validate_only": True}),
            ("UpdateDeployment", {"files": {}, "validate_only": True}),
            ("CreateDeployment", {"files": bundle, "validate_only": True}),
            ("CancelTask", {"id": task_id, "mode": "graceful", "grace_period_seconds": 0.1}),
            ("CancelTask", {"id": task_id, "mode": "hard", "grace_period_seconds": None}),
        ]
        app = create_app(hub)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub.test"
        ) as h:
            for method, body in cases:
                resp = await h.post(
                    f"/v1/{method}", json=body, headers={"Authorization": f"Bearer {token}"}
                )
                assert resp.status_code in (200, 400), (method, body, resp.text)
                assert valid(method, body) == (resp.status_code == 200), (method, body, resp.text)
    finally:
        await store.close()
