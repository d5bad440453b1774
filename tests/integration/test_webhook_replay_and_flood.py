"""Webhooks that cannot be flooded or replayed: rejections aggregate per minute, timestamped signatures expire.

The Hub's clock is injected (``Hub(store, clock=...)``), so windows and tolerances are exact.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from agen.api.hooks import hook_routes
from agen.bundle.config import Config
from agen.hub.service import Hub
from agen.hub.triggers.tick import sync_triggers
from agen.hub.triggers.verify import sign_timestamped
from agen.hub.triggers.webhook import create_webhook_secret, receive
from agen.store import SQLiteStore, Tx
from agen.testing.server import ThreadServer
from tests.unit.trigger_helpers import deployment

T0 = 1_800_000_000_000  # a minute boundary, in ms
KEY = "k3y"
TRIGGERS = [
    {"name": "gh", "type": "webhook"},
    {"name": "nosecret", "type": "webhook"},
    {
        "name": "stamped",
        "type": "webhook",
        "auth": {"type": "hmac", "secret": "HOOK", "scheme": "timestamped"},
    },
    {
        "name": "strict",
        "type": "webhook",
        "auth": {
            "type": "hmac",
            "secret": "HOOK",
            "scheme": "timestamped",
            "tolerance": "30s",
            "header": "X-Sig",
        },
    },
]


@dataclass
class Clock:
    ms: int = T0

    def __call__(self) -> int:
        return self.ms


@dataclass
class Env:
    store: SQLiteStore
    base: str
    clock: Clock


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    clock = Clock()
    hub = Hub(store, clock=clock)
    dep = await deployment(store, "triage")
    await store.write(
        lambda tx: sync_triggers(tx, dep, Config.model_validate({"triggers": TRIGGERS}))
    )
    await store.write(lambda tx: create_webhook_secret(tx, "default", "triage", "gh"))
    app = Starlette(routes=hook_routes(hub, lambda ns, name: KEY if name == "HOOK" else None))
    async with ThreadServer(app) as srv:
        yield Env(store, srv.url + "/hooks/default/triage", clock)
    await store.close()


async def junk(store: SQLiteStore, n: int, now_ms: int, trigger: str = "gh") -> None:
    def fn(tx: Tx) -> None:
        for _ in range(n):
            result = receive(
                tx,
                "default",
                "triage",
                trigger,
                {"Authorization": "Bearer junk"},
                b"{}",
                now_ms=now_ms,
            )
            assert result.status == 401

    await store.write(fn)


async def test_500_rejected_calls_in_a_minute_add_one_row_and_one_event(env: Env) -> None:
    await junk(env.store, 300, T0 + 100)
    await junk(env.store, 200, T0 + 500)
    rows = await env.store.all("SELECT count, reason FROM trigger_events WHERE status = 'rejected'")
    assert rows == [{"count": 500, "reason": "missing or wrong bearer secret"}]
    events = await env.store.all("SELECT data FROM events WHERE type = 'webhook.rejected'")
    assert len(events) == 1 and json.loads(events[0]["data"])["previous"] is None

    await junk(
        env.store, 3, T0 + 60_000
    )  # the next minute: a new row and event, which report the last count
    rows = await env.store.all(
        "SELECT count FROM trigger_events WHERE status = 'rejected' ORDER BY created_ms"
    )
    assert [r["count"] for r in rows] == [500, 3]
    events = await env.store.all(
        "SELECT data FROM events WHERE type = 'webhook.rejected' ORDER BY seq"
    )
    assert len(events) == 2
    assert json.loads(events[1]["data"])["previous"] == {"count": 500, "at_ms": T0 + 100}


async def test_a_flood_at_a_trigger_with_no_secret_logs_the_configuration_error_once_a_minute(
    env: Env,
) -> None:
    await junk(env.store, 200, T0 + 100, trigger="nosecret")
    await junk(env.store, 200, T0 + 60_100, trigger="nosecret")
    logs = await env.store.all(
        "SELECT message FROM deployment_logs WHERE message LIKE '%no secret yet%'"
    )
    assert len(logs) == 2


def stamped(body: bytes, t_ms: int, key: str = KEY) -> dict[str, str]:
    return {"X-Agen-Signature": sign_timestamped(body, key, t_ms // 1000)}


async def test_timestamped_signature_contract(env: Env) -> None:
    body = b'{"ref":"main"}'
    url = f"{env.base}/stamped"
    async with httpx.AsyncClient() as c:
        ok = await c.post(url, content=body, headers=stamped(body, T0 - 10_000))
        assert ok.status_code == 202, ok.text
        replay = await c.post(url, content=body, headers=stamped(body, T0 - 10_000))
        assert replay.status_code == 200 and replay.json() == {
            "task_id": ok.json()["task_id"],
            "duplicate": True,
        }

        env.clock.ms = T0 + 5 * 60_000  # the same delivery, replayed after the 5m tolerance
        stale = await c.post(url, content=body, headers=stamped(body, T0 - 10_000))
        assert (
            stale.status_code == 401 and "outside the tolerance" in stale.json()["error"]["message"]
        )
        future = await c.post(url, content=body, headers=stamped(body, env.clock.ms + 6 * 60_000))
        assert future.status_code == 401

        fresh = await c.post(url, content=body, headers=stamped(body, env.clock.ms))
        assert fresh.status_code == 202 and fresh.json()["task_id"] != ok.json()["task_id"]
        wrong_key = await c.post(
            url, content=body, headers=stamped(body, env.clock.ms, key="other")
        )
        assert wrong_key.status_code == 401
        plain = (
            "v1=" + hmac.new(KEY.encode(), body, hashlib.sha256).hexdigest()
        )  # no timestamp: refused
        assert (
            await c.post(url, content=body, headers={"X-Agen-Signature": plain})
        ).status_code == 401
        tampered = await c.post(url, content=b'{"ref":"evil"}', headers=stamped(body, env.clock.ms))
        assert tampered.status_code == 401
        assert (
            await c.post(f"{env.base}/nope", content=body, headers=stamped(body, env.clock.ms))
        ).status_code == 404
    # stale, future, wrong key, no timestamp, tampered: one aggregated row (the latest reason); 404 records nothing
    assert await env.store.all(
        "SELECT count, reason FROM trigger_events WHERE status = 'rejected'"
    ) == [{"count": 5, "reason": "signature does not match the timestamp and body"}]
    assert len(await env.store.all("SELECT 1 FROM tasks")) == 2


async def test_timestamped_tolerance_and_header_are_configurable(env: Env) -> None:
    body = b"{}"
    async with httpx.AsyncClient() as c:
        sig = sign_timestamped(body, KEY, (T0 - 31_000) // 1000)
        old = await c.post(f"{env.base}/strict", content=body, headers={"X-Sig": sig})
        assert old.status_code == 401
        sig = sign_timestamped(body, KEY, (T0 - 29_000) // 1000)
        assert (
            await c.post(f"{env.base}/strict", content=body, headers={"X-Sig": sig})
        ).status_code == 202


async def test_a_paused_deployments_webhook_queues_the_task_to_wait(env: Env) -> None:
    await env.store.write(
        lambda tx: tx.execute("UPDATE deployments SET paused = 1 WHERE name = 'triage'")
    )
    body = b"{}"
    async with httpx.AsyncClient() as c:
        resp = await c.post(f"{env.base}/stamped", content=body, headers=stamped(body, T0))
    assert resp.status_code == 202
    assert await env.store.all("SELECT state FROM tasks") == [{"state": "queued"}]


async def test_a_secret_in_a_webhook_body_is_masked_in_the_task_input(
    env: Env,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agen.bundle import digest_files
    from agen.hub.definitions import put_definition
    from tests.unit.bundle_helpers import bundle_files

    canary = "canary-webhook-5e1f-do-not-leak"
    monkeypatch.setenv("AGEN_TEST_CANARY", canary)
    files = bundle_files(
        secrets={"secrets": {"CANARY": {"source": "env", "env": "AGEN_TEST_CANARY"}}}
    )

    def redeploy(tx: Tx) -> None:
        def_id = put_definition(tx, "triage", digest_files(files), files)
        tx.execute("UPDATE deployments SET definition_id = ? WHERE name = 'triage'", (def_id,))

    await env.store.write(redeploy)
    body = json.dumps({"note": f"token {canary}"}).encode()
    async with httpx.AsyncClient() as c:
        resp = await c.post(f"{env.base}/stamped", content=body, headers=stamped(body, T0))
    assert resp.status_code == 202
    [task] = await env.store.all("SELECT input FROM tasks")
    assert canary not in task["input"] and "token [REDACTED]" in task["input"]
