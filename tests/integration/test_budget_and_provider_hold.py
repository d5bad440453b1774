"""Budgets and provider holds end to end: an in-process Hub + Nest running a bundle against the
local OpenAI-compatible server, which produces the costs and the 401s."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.errors import BudgetError, UnavailableError
from agen.hub.queue import providers
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.testing.openai_server import OpenAIServer, Reply
from agen.wire.deployments import CreateDeploymentRequest, ScaleDeploymentRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest, Task
from tests.fleet_helpers import files_b64, write_bundle


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[LocalNode]:
    store = await SQLiteStore.open(tmp_path / "node.db")
    n = LocalNode(store, tick_s=0.1, heartbeat_s=0.1)
    await n.start()
    try:
        yield n
    finally:
        await n.drain(5)
        await store.close()


async def deploy(node: LocalNode, root: Path, srv: OpenAIServer, config: dict[str, Any]) -> Client:
    write_bundle(
        root,
        "paid",
        config={"kind": "pool", "scale": {"min": 1, "max": 1, "maxConcurrency": 1}, **config},
    )
    (root / "x-agen/harness.json").write_text(
        json.dumps({"provider": "openai", "model": "m1", "baseUrl": srv.base_url})
    )
    client = Client.in_process(node.hub)
    await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(root)))
    return client


async def submit(client: Client, text: str) -> str:
    return (
        await client.call(r.SubmitTask, SubmitTaskRequest(deployment="paid", input=text))
    ).task.id


async def task(client: Client, task_id: str, wait: float = 0) -> Task:
    return (await client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=wait))).task


async def until(check: Callable[[], Any], timeout_s: float = 15) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await check():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def ticks_later(node: LocalNode, n: int) -> None:
    """Wait for ``n`` more leader ticks (counted through the leader's on_tick hook), not for a time."""
    seen = asyncio.Event()
    count = 0
    inner = node.leader.on_tick

    def ticked(summary: Any) -> None:
        nonlocal count
        count += 1
        if count >= n:
            seen.set()
        if inner is not None:
            inner(summary)

    node.leader.on_tick = ticked
    try:
        await asyncio.wait_for(seen.wait(), 30)
    finally:
        node.leader.on_tick = inner


async def test_costs_over_the_daily_budget_hold_the_deployment_at_zero_and_announce_each_threshold_once(
    tmp_path: Path,
    srv: OpenAIServer,
    node: LocalNode,
) -> None:
    srv.script(*[Reply(text="done", cost=0.006) for _ in range(5)])
    client = await deploy(node, tmp_path / "b", srv, {"budget": {"maxUsdPerDay": 0.01}})
    ids = [await submit(client, f"job {i}") for i in range(3)]
    assert (await task(client, ids[0], 30)).state == "succeeded"  # $0.006: 60 %
    assert (await task(client, ids[1], 30)).state == "succeeded"  # $0.012: over the limit
    store = node.store

    async def held_at_zero() -> bool:
        return bool(await store.scalar("SELECT desired FROM deployments WHERE name = 'paid'") == 0)

    await until(held_at_zero)
    await ticks_later(node, 3)  # three scheduler ticks later it still has not been leased
    waiting = await task(client, ids[2])
    assert waiting.state == "queued" and waiting.attempts == 0 and waiting.wait_reason == "budget"
    assert len(srv.requests) == 2
    rows = await store.all("SELECT data FROM events WHERE type = 'budget.threshold' ORDER BY seq")
    assert [json.loads(row["data"])["percent"] for row in rows] == [50, 80, 100]
    with pytest.raises(BudgetError) as refused:
        await submit(client, "one more")
    assert refused.value.details["stage"] == "budget"
    # No manual scale-up either (seed 000 §5): 503 with the reset time, and the count stays at 0.
    with pytest.raises(UnavailableError) as held:
        await client.call(r.ScaleDeployment, ScaleDeploymentRequest(name="paid", replicas=1))
    assert held.value.http_status == 503 and held.value.details["reason"] == "budget"
    assert held.value.details["retry_after_s"] > 0
    assert "scaling it to 1 is refused until the budget resets at" in held.value.message
    assert await held_at_zero()
    scaled = await client.call(r.ScaleDeployment, ScaleDeploymentRequest(name="paid", replicas=0))
    assert scaled.deployment is not None and scaled.deployment.desired == 0  # down is still fine
    # A redeploy asking for instances is a scale-up too, judged by the budget it deploys.
    root = tmp_path / "b"
    with pytest.raises(UnavailableError) as redeploy:
        await client.call(
            r.CreateDeployment, CreateDeploymentRequest(files=files_b64(root), replicas=1)
        )
    assert "--replicas 1 is refused until the budget resets" in redeploy.value.message
    assert await held_at_zero()
    config = root / "x-agen/config.json"
    raised = {**json.loads(config.read_text()), "budget": {"maxUsdPerDay": 1.0}}
    config.write_text(json.dumps(raised))
    more = await client.call(
        r.CreateDeployment, CreateDeploymentRequest(files=files_b64(root), replicas=1)
    )
    assert more.deployment is not None and more.deployment.desired == 1


async def test_a_401_holds_the_account_then_one_probe_after_retry_at_and_its_success_resumes(
    tmp_path: Path,
    srv: OpenAIServer,
    node: LocalNode,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        providers, "FIRST_BACKOFF_MS", 3000
    )  # room for a slow machine to read it held
    srv.script(
        Reply(status=401, error="invalid api key"), Reply(text="probe ok"), Reply(text="after")
    )
    client = await deploy(node, tmp_path / "b", srv, {})
    account = f"default/openai:OPENAI_API_KEY@{srv.base_url.rstrip('/')}"
    first = await task(client, await submit(client, "first"), 30)
    assert first.state == "failed" and first.outcome and first.outcome["reason"] == "account_error"
    assert first.outcome["data"] == {"account": account}
    store = node.store
    hold = await store.one("SELECT * FROM provider_holds WHERE account = ?", (account,))
    assert hold is not None and hold["resumed_ms"] is None
    probe_id, later_id = await submit(client, "second"), await submit(client, "third")
    waiting = await task(client, probe_id)  # the hold is in place before the task is even queued
    assert waiting.state == "queued" and waiting.wait_reason == "provider_hold"
    assert (await task(client, probe_id, 30)).state == "succeeded"
    assert (await task(client, later_id, 30)).state == "succeeded"
    leases = {
        row["task_id"]: row["created_ms"]
        for row in await store.all(
            "SELECT task_id, created_ms FROM events WHERE type IN ('task.leased', 'task.started') AND task_id IN (?, ?)",
            (probe_id, later_id),
        )
    }
    assert leases[probe_id] >= hold["retry_at_ms"]  # nothing leased before retry_at
    probe_done = await store.scalar("SELECT finished_ms FROM tasks WHERE id = ?", (probe_id,))
    assert leases[later_id] >= probe_done  # one probe at a time: the next waited for its result

    async def resumed() -> bool:
        return bool(
            await store.scalar(
                "SELECT resumed_ms FROM provider_holds WHERE account = ?", (account,)
            )
        )

    await until(resumed)
    kinds = [
        row["type"]
        for row in await store.all(
            "SELECT type FROM events WHERE type LIKE 'provider.%' ORDER BY seq"
        )
    ]
    assert kinds == ["provider.held", "provider.resumed"]
    assert len(srv.requests) == 3


async def test_the_next_one_shot_with_a_changed_key_is_not_held_by_the_old_keys_401(
    tmp_path: Path,
    srv: OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two embedded Hub + Nest lifetimes over one store, as two `agen run` one-shots are."""
    srv.script(Reply(status=401, error="invalid api key"), Reply(text="fine with the new key"))
    root = write_bundle(
        tmp_path / "b", "paid", config={"kind": "pool", "scale": {"min": 1, "max": 1}}
    )
    (root / "x-agen/harness.json").write_text(
        json.dumps(
            {
                "provider": "openai",
                "model": "m1",
                "baseUrl": srv.base_url,
                "apiKeySecret": "PAID_KEY",
            }
        )
    )
    (root / "x-agen/secrets.json").write_text(
        json.dumps({"secrets": {"PAID_KEY": {"source": "env"}}})
    )
    account = f"default/openai:PAID_KEY@{srv.base_url.rstrip('/')}"
    store = await SQLiteStore.open(tmp_path / "node.db")

    async def one_shot(text: str) -> Task:
        node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1)
        await node.start()
        try:
            client = Client.in_process(node.hub)
            await client.call(
                r.CreateDeployment if text == "first" else r.UpdateDeployment,
                CreateDeploymentRequest(files=files_b64(root)),
            )
            return await task(client, await submit(client, text), 30)
        finally:
            await node.drain(5)

    try:
        monkeypatch.setenv("PAID_KEY", "sk-old")
        first = await one_shot("first")
        assert first.state == "failed" and first.error is not None
        assert (
            f"`agen providers resume {account}`" in first.error
        )  # the first error says how to end the hold
        assert srv.headers[0]["authorization"] == "Bearer sk-old"
        hold = await store.one(
            "SELECT retry_at_ms, key_fingerprint FROM provider_holds WHERE account = ?", (account,)
        )
        assert (
            hold is not None and hold["key_fingerprint"] and "sk-old" not in hold["key_fingerprint"]
        )

        monkeypatch.setenv(
            "PAID_KEY", "sk-new"
        )  # the operator fixes the key: a new account, not held
        second = await one_shot("second")
        assert second.state == "succeeded"
        assert srv.headers[1]["authorization"] == "Bearer sk-new"
        leased = await store.scalar(
            "SELECT created_ms FROM events WHERE type = 'task.started' AND task_id = ?",
            (second.id,),
        )
        assert leased < hold["retry_at_ms"]  # it did not wait out the old key's hold
    finally:
        await store.close()
