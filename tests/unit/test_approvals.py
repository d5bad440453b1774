"""Durable approvals: one pending row per run/tool/args, a task's run suspends on it, people decide once."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from agen.errors import ConflictError, DeniedError
from agen.runner.approvals import CallbackGate, StoreApprovalGate, decide_approval
from agen.runner.policy import ApprovalDecision, ApprovalRequest
from agen.runner.records import open_run
from agen.runner.types import RunRequest
from agen.store.base import Store


async def new_run(store: Store) -> str:
    req = RunRequest(input="hi", deployment="dep", requested_by="alice")
    opened = await store.write(lambda tx: open_run(tx, req, "owner", "fake", None))
    return opened.run.id


def request(
    run_id: str,
    call_id: str = "call-1",
    args: dict[str, object] | None = None,
    task_id: str | None = None,
) -> ApprovalRequest:
    return ApprovalRequest(
        namespace="default",
        deployment="dep",
        run_id=run_id,
        task_id=task_id,
        call_id=call_id,
        tool="mail.send",
        arguments=args or {"to": "bob"},
        requested_by="alice",
    )


async def pending(store: Store) -> list[dict[str, object]]:
    return await store.all("SELECT * FROM approvals WHERE state = 'pending'")


async def until_pending(store: Store) -> list[dict[str, object]]:
    """Wait (with a deadline, not a fixed sleep) until the gate's approval row exists."""
    for _ in range(500):
        rows = await pending(store)
        if rows:
            return rows
        await asyncio.sleep(0.01)
    raise AssertionError("no pending approval appeared")


async def test_a_run_without_a_task_waits_as_waiting_approval_until_someone_else_approves(
    store: Store,
) -> None:
    run_id = await new_run(store)
    gate = StoreApprovalGate(store, poll_s=0.2)
    waiting = asyncio.create_task(
        gate.decide(request(run_id))
    )  # no task to suspend: it waits in place
    [row] = await until_pending(store)
    assert (
        await store.scalar("SELECT status FROM runs WHERE id = ?", (run_id,)) == "waiting_approval"
    )
    assert await store.scalar("SELECT COUNT(*) FROM events WHERE type = 'approval.requested'") == 1

    with pytest.raises(
        DeniedError, match="the principal that caused an approval cannot approve it"
    ):
        await store.write(lambda tx: decide_approval(tx, str(row["id"]), True, "alice"))
    assert await store.scalar("SELECT state FROM approvals WHERE id = ?", (row["id"],)) == "pending"

    await store.write(lambda tx: decide_approval(tx, str(row["id"]), True, "bob", "looks fine"))
    decision = await asyncio.wait_for(waiting, 5)
    assert decision == ApprovalDecision(True, note="looks fine", decided_by="bob")
    assert await store.scalar("SELECT status FROM runs WHERE id = ?", (run_id,)) == "running"

    with pytest.raises(ConflictError, match="already approved by bob"):
        await store.write(lambda tx: decide_approval(tx, str(row["id"]), False, "carol"))


async def test_a_task_run_is_told_to_suspend_and_the_same_call_reuses_the_pending_approval(
    store: Store,
) -> None:
    run_id = await new_run(store)
    gate = StoreApprovalGate(store)
    first = await gate.decide(request(run_id, "call-1", task_id="task-1"))
    second = await gate.decide(
        request(run_id, "call-2", task_id="task-1")
    )  # same tool and arguments
    assert first.pending is not None and not first.approved
    assert second.pending == first.pending
    assert await store.scalar("SELECT COUNT(*) FROM approvals") == 1
    assert (
        await store.scalar("SELECT status FROM runs WHERE id = ?", (run_id,)) == "waiting_approval"
    )
    await store.write(
        lambda tx: decide_approval(tx, str(first.pending), False, "bob", "not to bob")
    )
    decision = await gate.decide(
        request(run_id, "call-1", task_id="task-1")
    )  # the resumed run reads it
    assert not decision.approved and decision.pending is None and decision.note == "not to bob"
    assert await store.scalar("SELECT status FROM runs WHERE id = ?", (run_id,)) == "running"


async def test_a_decided_call_is_not_asked_again_when_the_run_resumes(store: Store) -> None:
    run_id = await new_run(store)
    gate = StoreApprovalGate(store)
    asked = await gate.decide(request(run_id, task_id="task-1"))
    await store.write(lambda tx: decide_approval(tx, str(asked.pending), True, "bob"))
    again = await gate.decide(request(run_id, task_id="task-1"))  # e.g. after a crash, same call id
    assert again.approved and again.decided_by == "bob"
    assert await store.scalar("SELECT COUNT(*) FROM approvals") == 1


async def test_self_approval_is_refused_except_for_the_local_admin_or_when_allowed(
    store: Store,
) -> None:
    run_id = await new_run(store)
    gate = StoreApprovalGate(store)
    local = await gate.decide(
        replace(request(run_id, "c1", task_id="t"), requested_by="local-admin")
    )
    await store.write(lambda tx: decide_approval(tx, str(local.pending), True, "local-admin"))
    allowed = await gate.decide(replace(request(run_id, "c2", {"to": "carol"}, task_id="t")))
    with pytest.raises(DeniedError):
        await store.write(lambda tx: decide_approval(tx, str(allowed.pending), True, "alice"))
    await store.write(
        lambda tx: decide_approval(tx, str(allowed.pending), True, "alice", allow_self=True)
    )
    denied = await gate.decide(request(run_id, "c3", {"to": "dave"}, task_id="t"))
    await store.write(
        lambda tx: decide_approval(tx, str(denied.pending), False, "alice")
    )  # denying one's own is fine
    states = await store.all("SELECT state FROM approvals ORDER BY created_ms, id")
    assert [r["state"] for r in states] == ["approved", "approved", "denied"]


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


def test_upgrading_closes_approvals_that_tasks_which_already_ended_left_pending() -> None:
    import sqlite3

    from agen.store.migrate import known_migrations, migrate_sqlite, split_statements

    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_ms INTEGER NOT NULL)"
    )
    for mig in known_migrations()[:7]:  # a store written before approvals could be closed
        for stmt in split_statements(mig.sql):
            conn.execute(stmt)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (mig.version, mig.name))
    for seq, (task_id, state) in enumerate((("t-done", "cancelled"), ("t-live", "waiting"))):
        conn.execute(
            "INSERT INTO tasks (id, namespace, deployment_id, deployment, state, input, root_task_id, seq,"
            " created_ms, updated_ms, finished_ms) VALUES (?, 'default', 'd', 'dep', ?, 'x', ?, ?, 0, 0, 5)",
            (task_id, state, task_id, seq),
        )
        conn.execute(
            "INSERT INTO approvals (id, namespace, deployment, run_id, task_id, tool, arguments, args_hash,"
            " created_ms) VALUES (?, 'default', 'dep', 'r', ?, 'mail.send', '{}', ?, 0)",
            (f"a-{task_id}", task_id, task_id),
        )
    migrate_sqlite(conn, ":memory:", 0)
    rows = dict(conn.execute("SELECT task_id, state FROM approvals").fetchall())
    assert rows == {"t-done": "cancelled", "t-live": "pending"}
