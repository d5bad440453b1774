"""The A2A Gateway on a Hub and Nest in this process: wake on call, pauses, the wake timeout (an
injected clock), auth, conversations, idempotency and lineage, over the Gateway's own HTTP app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from agen.api import registry as r
from agen.api.dispatch import dispatch
from agen.api.registry import Rpc
from agen.client import Client
from agen.domain import DeploymentRow
from agen.gateway import GatewayConfig, create_gateway_app
from agen.gateway.wake import WakePolicy
from agen.hub.queue.budgets import utc_day
from agen.hub.service import Hub
from agen.node import LocalNode
from agen.otel.ids import agen_trace_id
from agen.store import SQLiteStore
from agen.store.records import read
from agen.wire.deployments import (
    CreateDeploymentRequest,
    GetDeploymentRequest,
    PauseDeploymentRequest,
)
from agen.wire.tasks import GetTaskRequest, ListTasksRequest
from agen.wire.tokens import CreateTokenRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.unit.trigger_helpers import add_usage


class _AsCaller:
    """The Hub in process, called as the holder of ``token`` (what the HTTP API does per request)."""

    def __init__(self, hub: Hub, token: str) -> None:
        self.hub, self.token = hub, token

    async def call(self, rpc: Rpc[Any, Any], request: BaseModel) -> BaseModel:
        principal = await self.hub.auth.authenticate(self.token, self.hub.clock())
        return await dispatch(self.hub, principal, rpc, request)

    async def aclose(self) -> None:
        return None


class _InProcessLink:
    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    def client(self, token: str) -> Client:
        return Client(_AsCaller(self.hub, token))


class FakeClock:
    """Each reading is ``step`` seconds after the last: the wake timeout passes without waiting."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[LocalNode]:
    store = await SQLiteStore.open(tmp_path / "gw.db")
    node = LocalNode(store, tick_s=0.05, heartbeat_s=0.05)
    await node.start()
    try:
        yield node
    finally:
        await node.drain(5)
        await store.close()


async def _deploy(node: LocalNode, tmp_path: Path, name: str, scale: dict[str, int]) -> None:
    bundle = write_bundle(tmp_path / name, name, config={"kind": "pool", "scale": scale})
    await Client.in_process(node.hub).call(
        r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle))
    )


async def _token(node: LocalNode, scope: str) -> str:
    made = await Client.in_process(node.hub).call(
        r.CreateToken,
        CreateTokenRequest(scopes=[scope], name=scope),
    )
    return made.token


def _http(node: LocalNode, clock: FakeClock | None = None) -> httpx.AsyncClient:
    wake = WakePolicy(poll_s=0.02, clock=clock) if clock else WakePolicy(poll_s=0.02)
    app = create_gateway_app(
        GatewayConfig(hub_url="http://hub.invalid", public_url="http://gw.test", wake=wake),
        link=_InProcessLink(node.hub),
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test")


def _send(
    text: str, message_id: str, context_id: str | None = None, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A v0.3 message/send body: what an older A2A client posts."""
    message: dict[str, Any] = {
        "role": "user",
        "messageId": message_id,
        "parts": [{"kind": "text", "text": text}],
    }
    if context_id:
        message["contextId"] = context_id
    if meta:
        message["metadata"] = meta
    return {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_call_to_a_deployment_at_zero_wakes_it_and_gets_the_answer(
    node: LocalNode, tmp_path: Path
) -> None:
    await _deploy(node, tmp_path, "sleepy", {"min": 0, "max": 1})
    admin = Client.in_process(node.hub)
    before = (await admin.call(r.GetDeployment, GetDeploymentRequest(name="sleepy"))).deployment
    assert before is not None and before.desired == 0 and before.ready == 0
    token = await _token(node, "operator")
    async with _http(node) as gw:
        resp = await gw.post(
            "/a2a/default/sleepy", json=_send("wake up", "m1"), headers=_auth(token)
        )
    assert resp.status_code == 200, resp.text
    result = resp.json()["result"]
    assert result["status"]["state"] == "completed"
    assert result["artifacts"][0]["parts"][0]["text"] == "You said: wake up"  # the echo model


async def test_a_paused_deployment_answers_503_with_a_retry_hint(
    node: LocalNode, tmp_path: Path
) -> None:
    await _deploy(node, tmp_path, "held", {"min": 0, "max": 1})
    await Client.in_process(node.hub).call(r.PauseDeployment, PauseDeploymentRequest(name="held"))
    token = await _token(node, "operator")
    async with _http(node) as gw:
        resp = await gw.post("/a2a/default/held", json=_send("hi", "m1"), headers=_auth(token))
    assert resp.status_code == 503
    assert int(resp.headers["Retry-After"]) > 0
    assert "paused" in resp.text
    tasks = await Client.in_process(node.hub).call(r.ListTasks, ListTasksRequest(deployment="held"))
    assert tasks.tasks == []  # nothing was queued behind the pause


async def test_a_deployment_whose_daily_budget_is_spent_answers_503_with_the_reset_time(
    node: LocalNode, tmp_path: Path
) -> None:
    """Held at 0 by its budget, a deployment cannot be woken (seed 000 §5): the call gets 503 with
    when the budget resets, at once, and nothing is queued behind it."""
    bundle = write_bundle(
        tmp_path / "paid",
        "paid",
        config={"kind": "pool", "scale": {"min": 0, "max": 1}, "budget": {"maxUsdPerDay": 0.01}},
    )
    admin = Client.in_process(node.hub)
    await admin.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
    row = await node.store.one("SELECT * FROM deployments WHERE name = 'paid'")
    assert row is not None
    dep = read(DeploymentRow, row)
    await node.store.write(lambda tx: add_usage(tx, dep, 0.02, day=utc_day(tx.now_ms)))
    token = await _token(node, "operator")
    async with _http(node) as gw:
        resp = await gw.post("/a2a/default/paid", json=_send("hi", "m1"), headers=_auth(token))
    assert resp.status_code == 503, resp.text
    assert 0 < int(resp.headers["Retry-After"]) <= 86_400
    assert "spent $0.02 of $0.01 today (UTC); resets at midnight UTC" in resp.text
    tasks = await admin.call(r.ListTasks, ListTasksRequest(deployment="paid"))
    assert tasks.tasks == []


async def test_a_call_refused_by_admission_gets_429_with_when_to_retry(
    node: LocalNode, tmp_path: Path
) -> None:
    bundle = write_bundle(
        tmp_path / "full",
        "full",
        config={"kind": "pool", "scale": {"min": 0, "max": 1}, "admission": {"maxQueuedTasks": 0}},
    )
    await Client.in_process(node.hub).call(
        r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle))
    )
    token = await _token(node, "operator")
    async with _http(node) as gw:
        resp = await gw.post("/a2a/default/full", json=_send("hi", "m1"), headers=_auth(token))
    assert resp.status_code == 429, resp.text
    assert resp.headers["Retry-After"] == "5"
    assert "maxQueuedTasks is 0" in resp.text


async def test_a_call_with_no_instance_within_the_wake_timeout_gets_503_and_its_task_is_cancelled(
    node: LocalNode, tmp_path: Path
) -> None:
    await _deploy(node, tmp_path, "never", {"min": 0, "max": 0})  # no instance can ever start
    token = await _token(node, "operator")
    async with _http(node, FakeClock(step=120.0)) as gw:  # 10 min pass in a few readings
        resp = await gw.post("/a2a/default/never", json=_send("hi", "m1"), headers=_auth(token))
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "30"
    assert "no free instance within 600 s" in resp.text
    tasks = await Client.in_process(node.hub).call(
        r.ListTasks, ListTasksRequest(deployment="never")
    )
    assert [t.state for t in tasks.tasks] == ["cancelled"]  # it will not run after the caller left


async def test_calls_need_a_token_with_the_operator_scope(node: LocalNode, tmp_path: Path) -> None:
    await _deploy(node, tmp_path, "guarded", {"min": 0, "max": 1})
    viewer = await _token(node, "viewer")
    async with _http(node) as gw:
        anonymous = await gw.post("/a2a/default/guarded", json=_send("hi", "m1"))
        unknown = await gw.post(
            "/a2a/default/guarded", json=_send("hi", "m1"), headers=_auth("agen_nope")
        )
        read_only = await gw.post(
            "/a2a/default/guarded", json=_send("hi", "m1"), headers=_auth(viewer)
        )
        card = await gw.get(
            "/a2a/default/guarded/.well-known/agent-card.json", headers=_auth(viewer)
        )
        no_card = await gw.get("/a2a/default/guarded/.well-known/agent-card.json")
    assert anonymous.status_code == 401 and anonymous.headers["WWW-Authenticate"] == "Bearer"
    assert unknown.status_code == 401
    assert read_only.status_code == 403 and "operator" in read_only.text
    assert card.status_code == 200 and card.json()["name"] == "guarded"
    assert no_card.status_code == 401
    tasks = await Client.in_process(node.hub).call(
        r.ListTasks, ListTasksRequest(deployment="guarded")
    )
    assert tasks.tasks == []


async def test_a_context_is_one_conversation_and_a_repeated_message_id_is_the_same_task(
    node: LocalNode, tmp_path: Path
) -> None:
    await _deploy(node, tmp_path, "chat", {"min": 0, "max": 1})
    token = await _token(node, "operator")
    other = await _token(node, "operator")
    async with _http(node) as gw:
        first = (
            await gw.post("/a2a/default/chat", json=_send("one", "m1", "ctx"), headers=_auth(token))
        ).json()
        again = (
            await gw.post("/a2a/default/chat", json=_send("one", "m1", "ctx"), headers=_auth(token))
        ).json()
        second = (
            await gw.post("/a2a/default/chat", json=_send("two", "m2", "ctx"), headers=_auth(token))
        ).json()
        theirs = (
            await gw.post("/a2a/default/chat", json=_send("one", "m1", "ctx"), headers=_auth(other))
        ).json()
        get = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tasks/get",
            "params": {"id": first["result"]["id"]},
        }
        stolen = (await gw.post("/a2a/default/chat", json=get, headers=_auth(other))).json()
        mine = (await gw.post("/a2a/default/chat", json=get, headers=_auth(token))).json()
    assert again["result"]["id"] == first["result"]["id"]  # the same task, not run twice
    assert second["result"]["id"] != first["result"]["id"]
    assert theirs["result"]["id"] != first["result"]["id"]  # another caller's message id is theirs
    assert second["result"]["contextId"] == first["result"]["contextId"] == "ctx"
    admin = Client.in_process(node.hub)
    keys = {
        t.id: t.conversation_key or ""
        for t in (await admin.call(r.ListTasks, ListTasksRequest(deployment="chat"))).tasks
    }
    assert keys[first["result"]["id"]] == keys[second["result"]["id"]]
    key = keys[first["result"]["id"]]
    assert key.startswith("a2a:user:") and key.endswith(":ctx")  # a2a:<caller>:<contextId>
    assert keys[theirs["result"]["id"]] != keys[first["result"]["id"]]
    assert "error" in stolen and "result" not in stolen  # tasks/get of another caller's task
    assert mine["result"]["status"]["state"] == "completed"


async def test_trace_and_labels_in_a2a_metadata_reach_the_task_and_an_api_tokens_lineage_is_ignored(
    node: LocalNode, tmp_path: Path
) -> None:
    await _deploy(node, tmp_path, "traced", {"min": 0, "max": 1})
    token = await _token(node, "operator")
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    async with _http(node) as gw:
        ok = await gw.post(
            "/a2a/default/traced",
            json=_send("hi", "m1", meta={"traceparent": trace, "agen.labels": {"team": "a"}}),
            headers=_auth(token),
        )
        claimed = await gw.post(
            "/a2a/default/traced",
            json=_send("hi", "m2", meta={"agen.parent_run_id": "01RUN", "agen.depth": 3}),
            headers=_auth(token),
        )
    task_id = ok.json()["result"]["id"]
    task = (await Client.in_process(node.hub).call(r.GetTask, GetTaskRequest(id=task_id))).task
    assert task.labels == {"team": "a"}
    run_trace = await node.hub.store.scalar(
        "SELECT trace_id FROM runs WHERE task_id = ?", (task_id,)
    )
    assert run_trace == agen_trace_id("0af7651916cd43dd8448eb211c80319c")  # the caller's trace
    # Lineage is honoured only from an agent's call token: this call starts a new tree.
    new_tree = claimed.json()["result"]["id"]
    row = await node.hub.store.one(
        "SELECT depth, parent_run_id FROM tasks WHERE id = ?", (new_tree,)
    )
    assert row == {"depth": 0, "parent_run_id": None}


async def test_a_traceparent_header_joins_the_callers_trace_and_an_invalid_one_starts_a_new_trace(
    node: LocalNode, tmp_path: Path
) -> None:
    """W3C trace-context over HTTP: the Gateway reads the ``traceparent`` header as the API does
    (metadata, when it has one, wins); an invalid traceparent (all-zero ids) in the header or in the
    metadata is ignored and the run starts its own trace, never refusing the call (§4.3)."""
    await _deploy(node, tmp_path, "traced", {"min": 0, "max": 1})
    token = await _token(node, "operator")
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    zeros = "00-00000000000000000000000000000000-0000000000000000-01"
    async with _http(node) as gw:
        by_header = await gw.post(
            "/a2a/default/traced",
            json=_send("hi", "m1"),
            headers={**_auth(token), "traceparent": trace},
        )
        zero_meta = await gw.post(
            "/a2a/default/traced",
            json=_send("hi", "m2", meta={"traceparent": zeros}),
            headers=_auth(token),
        )
        zero_header = await gw.post(
            "/a2a/default/traced",
            json=_send("hi", "m3"),
            headers={**_auth(token), "traceparent": zeros},
        )

    async def trace_of(resp: Any) -> str:
        body = resp.json()
        assert resp.status_code == 200 and "result" in body, body
        task_id = body["result"]["id"]
        await Client.in_process(node.hub).call(
            r.GetTask, GetTaskRequest(id=task_id, wait_seconds=30)
        )
        return str(
            await node.hub.store.scalar("SELECT trace_id FROM runs WHERE task_id = ?", (task_id,))
        )

    assert await trace_of(by_header) == agen_trace_id("0af7651916cd43dd8448eb211c80319c")
    for resp in (zero_meta, zero_header):  # accepted, in a trace of its own
        own = await trace_of(resp)
        assert own not in ("None", agen_trace_id("0" * 32))


async def test_a_call_in_progress_keeps_its_instance_though_the_idle_timeout_is_zero(
    node: LocalNode, tmp_path: Path
) -> None:
    import asyncio
    import json
    import sys

    gate, started = tmp_path / "gate", tmp_path / "started"
    bundle = write_bundle(
        tmp_path / "slow",
        "slow",
        script=[
            {
                "toolCalls": [
                    {
                        "name": "t_wait_for_gate",
                        "arguments": {"gate": str(gate), "started": str(started)},
                    }
                ]
            },
            {"text": "through"},
        ],
        config={
            "kind": "pool",
            "scale": {"min": 0, "max": 1, "idleTimeout": "0s"},
            "permissions": {"default": "allow"},
        },
        sandbox={"filesystem": {"write": [str(tmp_path)]}},  # the server writes started, reads gate
    )
    server = Path(__file__).parent.parent / "fixtures" / "mcp_test_server.py"
    (bundle / "mcp.json").write_text(
        json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": [str(server)]}}})
    )
    admin = Client.in_process(node.hub)
    await admin.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
    token = await _token(node, "operator")
    async with _http(node) as gw:
        call = asyncio.create_task(
            gw.post("/a2a/default/slow", json=_send("go", "m1"), headers=_auth(token))
        )
        deadline = asyncio.get_running_loop().time() + 60
        while not started.exists():  # the call's run is inside its tool call now
            assert asyncio.get_running_loop().time() < deadline, "the call never started"
            await asyncio.sleep(0.05)
        for _ in range(3):  # idle timeout 0: an idle deployment would go to 0 on any of these
            await node.leader.step()
            await node.manager.tick()
        dep = (await admin.call(r.GetDeployment, GetDeploymentRequest(name="slow"))).deployment
        assert dep is not None and dep.desired == 1 and dep.ready == 1
        gate.touch()
        resp = await call
    result = resp.json()["result"]
    assert result["status"]["state"] == "completed"
    assert result["artifacts"][0]["parts"][0]["text"] == "through"
    task = (await admin.call(r.GetTask, GetTaskRequest(id=result["id"]))).task
    assert task.attempts == 1  # one run, never stopped and requeued under the call
    await node.leader.step()  # with the call over, the same idle timeout lets it go to zero
    after = (await admin.call(r.GetDeployment, GetDeploymentRequest(name="slow"))).deployment
    assert after is not None and after.desired == 0


async def test_agen_ups_gateway_serves_the_card_without_a_token_to_loopback_only(
    node: LocalNode, tmp_path: Path
) -> None:
    """Seed 000 §10: anonymous callers on `agen up` may read an agent card from this machine; a
    call still needs a token, and a caller from elsewhere needs one for the card too."""
    from agen.hub.auth import CARD_READER
    from agen.wire.agents import ResolveAgentRequest

    await _deploy(node, tmp_path, "open", {"min": 0, "max": 1})

    async def read_card(namespace: str, deployment: str) -> Any:
        req = ResolveAgentRequest(namespace=namespace, deployment=deployment)
        return await Client.in_process(node.hub, CARD_READER).call(r.ResolveAgent, req)

    app = create_gateway_app(
        GatewayConfig(
            hub_url="http://hub.invalid", public_url="http://gw.test", anonymous_card=read_card
        ),
        link=_InProcessLink(node.hub),
    )
    card_path = "/a2a/default/open/.well-known/agent-card.json"
    for client, card_status in ((("127.0.0.1", 5000), 200), (("10.1.2.3", 5000), 401)):
        transport = httpx.ASGITransport(app=app, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw.test") as gw:
            card = await gw.get(card_path)
            call = await gw.post("/a2a/default/open", json=_send("hi", "m1"))
        assert card.status_code == card_status, (client, card.text)
        assert call.status_code == 401, client


async def test_a_message_with_a_file_and_a_data_part_reaches_the_model_as_files(
    node: LocalNode, tmp_path: Path
) -> None:
    """A2A file parts with bytes and data parts become the task's files (stored artifacts); the
    echo model says what it got. A file by URI is refused as not supported yet."""
    import base64

    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    await _deploy(node, tmp_path, "looker", {"min": 0, "max": 1})
    token = await _token(node, "operator")
    body = _send("look", "m-files")
    body["params"]["message"]["parts"] += [
        {
            "kind": "file",
            "file": {
                "name": "cat.png",
                "mimeType": "image/png",
                "bytes": base64.b64encode(png).decode(),
            },
        },
        {"kind": "data", "data": {"rows": 3}},
    ]
    async with _http(node) as gw:
        resp = await gw.post("/a2a/default/looker", json=body, headers=_auth(token))
        by_uri = _send("look", "m-uri")
        by_uri["params"]["message"]["parts"].append(
            {"kind": "file", "file": {"uri": "https://example.com/cat.png"}}
        )
        refused = await gw.post("/a2a/default/looker", json=by_uri, headers=_auth(token))
    assert resp.status_code == 200, resp.text
    answer = resp.json()["result"]["artifacts"][0]["parts"][0]["text"]
    assert answer.startswith(f"You said: look [attached: cat.png (image/png, {len(png)} bytes); ")
    assert "data-" in answer and "(application/json, " in answer
    assert "not supported yet: A2A url parts" in refused.json()["error"]["message"]
