"""Webhook triggers through real HTTP: secrets, HMAC, body limit, redelivery."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from agen.api import registry as r
from agen.api.hooks import hook_routes
from agen.bundle.config import Config
from agen.client import Client
from agen.hub.service import Hub
from agen.hub.triggers.tick import sync_triggers
from agen.hub.triggers.webhook import create_webhook_secret
from agen.store import SQLiteStore
from agen.testing.server import ThreadServer
from agen.wire.deployments import CreateDeploymentRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.unit.trigger_helpers import deployment

TRIGGERS = [
    {"name": "gh", "type": "webhook", "input": "Triage this event:", "labels": {"src": "github"}},
    {
        "name": "signed",
        "type": "webhook",
        "auth": {
            "type": "hmac",
            "secret": "GH_HOOK",
            "header": "X-Hub-Signature-256",
            "prefix": "sha256=",
        },
        "idempotencyHeader": "X-GitHub-Delivery",
        "trust": "trusted",
    },
    {"name": "unset", "type": "webhook", "auth": {"type": "hmac", "secret": "NOT_SET"}},
]


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[SQLiteStore, str, str]]:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    hub = Hub(store)
    dep = await deployment(store, "triage")
    await store.write(
        lambda tx: sync_triggers(tx, dep, Config.model_validate({"triggers": TRIGGERS}))
    )
    secret = await store.write(lambda tx: create_webhook_secret(tx, "default", "triage", "gh"))
    app = Starlette(routes=hook_routes(hub, lambda ns, name: "k3y" if name == "GH_HOOK" else None))
    async with ThreadServer(app) as srv:
        yield store, srv.url + "/hooks/default/triage", secret
    await store.close()


async def rejected(store: SQLiteStore) -> list[str]:
    rows = await store.all(
        "SELECT reason FROM trigger_events WHERE status = 'rejected' ORDER BY created_ms, id"
    )
    return [r["reason"] for r in rows]


async def test_bearer_secret_redelivery_and_wrong_secret(env: tuple[SQLiteStore, str, str]) -> None:
    store, base, secret = env
    async with httpx.AsyncClient() as c:
        wrong = await c.post(
            f"{base}/gh", content=b'{"a":1}', headers={"Authorization": "Bearer nope"}
        )
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "rejected"
        missing = await c.post(f"{base}/gh", content=b'{"a":1}')
        assert missing.status_code == 401
        # Unless the two calls straddle a minute boundary, they share one aggregated row and one event.
        rows = await store.all("SELECT reason, count FROM trigger_events WHERE status = 'rejected'")
        assert sum(r["count"] for r in rows) == 2 and {r["reason"] for r in rows} == {
            "missing or wrong bearer secret"
        }
        assert len(await store.all("SELECT 1 FROM events WHERE type = 'webhook.rejected'")) == len(
            rows
        )

        hdrs = {"Authorization": f"Bearer {secret}", "Idempotency-Key": "delivery-1"}
        first = await c.post(f"{base}/gh", content=b'{"action":"opened"}', headers=hdrs)
        assert first.status_code == 202, first.text
        again = await c.post(f"{base}/gh", content=b'{"action":"opened"}', headers=hdrs)
        assert again.status_code == 200
        assert again.json() == {"task_id": first.json()["task_id"], "duplicate": True}
    rows = await store.all("SELECT * FROM tasks")
    assert len(rows) == 1
    task = rows[0]
    assert task["trust"] == "untrusted" and task["source"] == "webhook:gh"
    assert (
        task["submitted_by"] == "trigger:triage/gh"
    )  # the submitter its approvals are requested by
    assert task["input"] == 'Triage this event:\n\n{"action":"opened"}'
    assert task["idempotency_key"] == "webhook:gh:delivery-1" and '"src":"github"' in task["labels"]
    fired = await store.all("SELECT task_id FROM trigger_events WHERE status = 'fired'")
    assert fired == [{"task_id": task["id"]}]


async def test_hmac_signed_calls_and_a_bad_signature(env: tuple[SQLiteStore, str, str]) -> None:
    store, base, _ = env
    body = b'{"ref":"main"}'
    good = "sha256=" + hmac.new(b"k3y", body, hashlib.sha256).hexdigest()
    async with httpx.AsyncClient() as c:
        bad = await c.post(
            f"{base}/signed",
            content=body,
            headers={"X-Hub-Signature-256": "sha256=" + "0" * 64, "X-GitHub-Delivery": "d1"},
        )
        assert bad.status_code == 401
        ok = await c.post(
            f"{base}/signed",
            content=body,
            headers={"X-Hub-Signature-256": good, "X-GitHub-Delivery": "d1"},
        )
        assert ok.status_code == 202
        redelivered = await c.post(
            f"{base}/signed",
            content=body,
            headers={"X-Hub-Signature-256": good, "X-GitHub-Delivery": "d1"},
        )
        assert (
            redelivered.status_code == 200 and redelivered.json()["task_id"] == ok.json()["task_id"]
        )
    assert await rejected(store) == ["signature does not match the body"]
    rows = await store.all("SELECT trust FROM tasks")
    assert rows == [{"trust": "trusted"}]


async def test_a_body_over_one_mebibyte_is_refused_with_413(
    env: tuple[SQLiteStore, str, str],
) -> None:
    store, base, secret = env
    async with httpx.AsyncClient() as c:
        big = await c.post(
            f"{base}/gh",
            content=b"x" * (1024 * 1024 + 1),
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert big.status_code == 413
        exact = await c.post(
            f"{base}/gh",
            content=b"x" * (1024 * 1024),
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert exact.status_code == 202
    assert (await rejected(store))[0].endswith("over the 1 MiB limit")
    assert len(await store.all("SELECT 1 FROM tasks")) == 1


async def test_configuration_errors_go_to_the_deployment_log_not_the_caller(
    env: tuple[SQLiteStore, str, str],
) -> None:
    store, base, _ = env
    async with httpx.AsyncClient() as c:
        resp = await c.post(f"{base}/unset", content=b"{}")
        assert resp.status_code == 401 and "NOT_SET" not in resp.text
        assert (await c.post(f"{base}/nope", content=b"{}")).status_code == 404
    logs = await store.all("SELECT message, level FROM deployment_logs WHERE deployment = 'triage'")
    assert any("NOT_SET is not set" in r["message"] and r["level"] == "error" for r in logs)


async def test_an_hmac_secret_read_from_another_env_variable_verifies_calls(tmp_path: Path) -> None:
    """secrets.json ``{"source": "env", "env": "OTHER_NAME"}``: the Hub reads OTHER_NAME, as the
    runner reads every env secret, not a variable named after the secret."""
    store = await SQLiteStore.open(tmp_path / "agen.db")
    hub = Hub(store)
    bundle = write_bundle(
        tmp_path / "signed",
        "signed",
        config={
            "kind": "pool",
            "triggers": [
                {"name": "in", "type": "webhook", "auth": {"type": "hmac", "secret": "HOOK_KEY"}}
            ],
        },
    )
    (bundle / "x-agen" / "secrets.json").write_text(
        json.dumps({"secrets": {"HOOK_KEY": {"source": "env", "env": "OTHER_NAME"}}})
    )
    await Client.in_process(hub).call(
        r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle))
    )
    environ = {"OTHER_NAME": "k3y"}
    app = Starlette(routes=hook_routes(hub, lambda ns, variable: environ.get(variable)))
    body = b'{"ref":"main"}'
    signature = hmac.new(b"k3y", body, hashlib.sha256).hexdigest()
    try:
        async with ThreadServer(app) as srv, httpx.AsyncClient() as c:
            resp = await c.post(
                f"{srv.url}/hooks/default/signed/in",
                content=body,
                headers={"X-Signature": signature},
            )
        reasons = await rejected(store)
        assert resp.status_code == 202, (resp.text, reasons)
        assert len(await store.all("SELECT id FROM tasks")) == 1
    finally:
        await store.close()
