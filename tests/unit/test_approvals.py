"""Durable approvals: one pending row per run/tool/args, the run waits, people decide once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agen.errors import ConflictError, DeniedError
from agen.runner.approvals import CallbackGate, StoreApprovalGate, decide_approval
from agen.runner.policy import ApprovalDecision, ApprovalRequest
from agen.runner.records import open_run
from agen.runner.types import RunRequest
from agen.store.base import Store
from agen.store.sqlite import SQLiteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await SQLiteStore.open(tmp_path / "agen.db")
    yield s
    await s.close()


async def new_run(store: Store) -> str:
    req = RunRequest(input="hi", deployment="dep", requested_by="alice")
    opened = await store.write(lambda tx: open_run(tx, req, "owner", "fake", None))
    return str(opened.run["id"])


def request(run_id: str, call_id: str = "call-1", args: dict[str, object] | None = None) -> ApprovalRequest:
    return ApprovalRequest(namespace="default", deployment="dep", run_id=run_id, task_id=None, call_id=call_id,
                           tool="mail.send", arguments=args or {"to": "bob"}, requested_by="alice")


async def pending(store: Store) -> list[dict[str, object]]:
    return await store.all("SELECT * FROM approvals WHERE state = 'pending'")


async def test_run_waits_as_waiting_approval_until_someone_else_approves(store: Store) -> None:
    run_id = await new_run(store)
    gate = StoreApprovalGate(store, poll_s=0.2)
    waiting = asyncio.create_task(gate.decide(request(run_id)))
    for _ in range(200):
        if await pending(store):
            break
        await asyncio.sleep(0.01)
    [row] = await pending(store)
    assert await store.scalar("SELECT status FROM runs WHERE id = ?", (run_id,)) == "waiting_approval"
    assert await store.scalar("SELECT COUNT(*) FROM events WHERE type = 'approval.requested'") == 1

    with pytest.raises(DeniedError, match="the principal that caused an approval cannot approve it"):
        await store.write(lambda tx: decide_approval(tx, str(row["id"]), True, "alice"))
    assert not waiting.done()

    await store.write(lambda tx: decide_approval(tx, str(row["id"]), True, "bob", "looks fine"))
    decision = await asyncio.wait_for(waiting, 5)
    assert decision == ApprovalDecision(True, note="looks fine", decided_by="bob")
    assert await store.scalar("SELECT status FROM runs WHERE id = ?", (run_id,)) == "running"

    with pytest.raises(ConflictError, match="already approved by bob"):
        await store.write(lambda tx: decide_approval(tx, str(row["id"]), False, "carol"))


async def test_same_call_reuses_the_pending_approval_and_denial_carries_the_note(store: Store) -> None:
    run_id = await new_run(store)
    gate = StoreApprovalGate(store, poll_s=0.2)
    first = asyncio.create_task(gate.decide(request(run_id, "call-1")))
    second = asyncio.create_task(gate.decide(request(run_id, "call-2")))  # same tool and arguments
    for _ in range(200):
        if await pending(store):
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)  # let the second request reach the Store too
    rows = await store.all("SELECT * FROM approvals")
    assert len(rows) == 1
    await store.write(lambda tx: decide_approval(tx, str(rows[0]["id"]), False, "bob", "not to bob"))
    for task in (first, second):
        decision = await asyncio.wait_for(task, 5)
        assert not decision.approved and decision.note == "not to bob"


async def test_a_decided_call_is_not_asked_again_when_the_run_resumes(store: Store) -> None:
    run_id = await new_run(store)
    gate = StoreApprovalGate(store, poll_s=0.2)
    task = asyncio.create_task(gate.decide(request(run_id)))
    for _ in range(200):
        if await pending(store):
            break
        await asyncio.sleep(0.01)
    [row] = await pending(store)
    await store.write(lambda tx: decide_approval(tx, str(row["id"]), True, "bob"))
    assert (await task).approved
    again = await asyncio.wait_for(gate.decide(request(run_id)), 5)  # e.g. after a crash, same call id
    assert again.approved
    assert await store.scalar("SELECT COUNT(*) FROM approvals") == 1


async def test_callback_gate_accepts_sync_and_async_callbacks() -> None:
    seen: list[str] = []

    def sync_cb(req: ApprovalRequest) -> bool:
        seen.append(req.tool)
        return req.arguments.get("to") == "bob"

    async def async_cb(req: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(False, note="no thanks")

    assert (await CallbackGate(sync_cb).decide(request("r"))).approved
    assert not (await CallbackGate(sync_cb).decide(request("r", args={"to": "eve"}))).approved
    assert (await CallbackGate(async_cb).decide(request("r"))).note == "no thanks"
    assert seen == ["mail.send", "mail.send"]
