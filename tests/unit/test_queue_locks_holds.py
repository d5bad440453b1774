"""Declared and mid-run locks with fencing tokens; task and deployment holds."""

from __future__ import annotations

from typing import Any

import pytest

from agen.domain import LeasedTaskRow, TaskRow
from agen.errors import ConflictError
from agen.hub import queue as q
from agen.hub.queue.locks import held_locks
from agen.store import Store
from tests.unit.queue_helpers import new_task

LEASE = 30_000


async def submit(store: Store, dep: str, text: str = "hi", **kw: Any) -> TaskRow:
    row, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, text, **kw)))
    return row


async def lease(store: Store, dep: str, now_ms: int | None = None) -> list[LeasedTaskRow]:
    return await store.write(
        lambda tx: q.lease_tasks(
            tx,
            deployment_id=dep,
            nest_id="n",
            instance_id="i",
            limit=10,
            lease_ms=LEASE,
            now_ms=now_ms,
        )
    )


async def finish(store: Store, t: LeasedTaskRow) -> None:
    await store.write(
        lambda tx: q.complete_task(tx, t.task.id, t.lease_id, status="succeeded", outcome=None)
    )


async def test_declared_locks_are_granted_all_at_once_or_not_at_all(store: Store, dep: str) -> None:
    a = await submit(store, dep, "a", locks=["repo", "db"])
    b = await submit(store, dep, "b", locks=["db", "cache"])
    c = await submit(store, dep, "c", locks=["cache"])
    got = await lease(store, dep)
    assert [g.task.id for g in got] == [a.id, c.id]
    assert got[0].locks == {"db": 1, "repo": 1} and got[1].locks == {"cache": 1}
    assert await store.write(lambda tx: q.wait_reason(tx, q.get_task(tx, b.id))) == "locks"
    assert await store.scalar("SELECT COUNT(*) FROM locks WHERE task_id = ?", (b.id,)) == 0
    await finish(store, got[0])
    assert await lease(store, dep) == []  # cache still held by c
    await finish(store, got[1])
    [gb] = await lease(store, dep)
    assert gb.task.id == b.id and gb.locks == {"cache": 2, "db": 2}


async def test_fence_advances_only_on_handover_to_a_different_task(store: Store, dep: str) -> None:
    a = await submit(store, dep, "a", locks=["repo"])
    [la] = await lease(store, dep)
    assert la.locks == {"repo": 1}
    # the same task re-leased after its lease expired keeps its fence
    await store.write(lambda tx: q.expire_leases(tx, (la.task.lease_expires_ms or 0) + 1))
    [again] = await lease(store, dep, now_ms=(la.task.lease_expires_ms or 0) + 1)
    assert again.task.id == a.id and again.locks == {"repo": 1}
    # extending the lease or re-acquiring mid-run does not advance it
    await store.write(lambda tx: q.extend_lease(tx, a.id, again.lease_id, LEASE))
    assert await store.write(lambda tx: q.acquire_lock(tx, "default", "repo", a.id, 5_000)) == 1
    await finish(store, again)
    b = await submit(store, dep, "b", locks=["repo"])
    [lb] = await lease(store, dep)
    assert lb.task.id == b.id and lb.locks == {"repo": 2}


async def test_mid_run_lock_is_exclusive_and_climbs_across_release(store: Store, dep: str) -> None:
    await submit(store, dep, "a")
    await submit(store, dep, "b")
    ta, tb = await lease(store, dep)
    assert (
        await store.write(lambda tx: q.acquire_lock(tx, "default", "deploy", ta.task.id, 60_000))
        == 1
    )
    assert (
        await store.write(lambda tx: q.acquire_lock(tx, "default", "deploy", tb.task.id, 60_000))
        is None
    )
    assert await store.write(lambda tx: q.release_lock(tx, "default", "deploy", ta.task.id))
    assert (
        await store.write(lambda tx: q.acquire_lock(tx, "default", "deploy", tb.task.id, 60_000))
        == 2
    )
    await store.write(lambda tx: q.release_lock(tx, "default", "deploy", tb.task.id))
    assert (
        await store.write(lambda tx: q.acquire_lock(tx, "default", "deploy", ta.task.id, 60_000))
        == 3
    )
    # a declared lock and a mid-run one obey the same uniqueness rule
    c = await submit(store, dep, "c", locks=["deploy"])
    assert await lease(store, dep) == []
    await finish(store, ta)  # ending the task releases its mid-run lock
    assert await store.write(lambda tx: held_locks(tx, ta.task.id)) == {}
    [lc] = await lease(store, dep)
    assert lc.task.id == c.id and lc.locks == {"deploy": 4}


async def test_locks_are_released_on_every_terminal_path(store: Store, dep: str) -> None:
    t = await submit(store, dep, locks=["x"])
    [lt] = await lease(store, dep)
    await store.write(lambda tx: q.cancel_task(tx, t.id, by="me"))
    assert await store.scalar("SELECT COUNT(*) FROM locks") == 0
    await submit(store, dep, locks=["x"])
    [lt] = await lease(store, dep)
    await store.write(lambda tx: q.suspend_task(tx, lt.task.id, lt.lease_id, "child:z"))
    assert await store.scalar("SELECT COUNT(*) FROM locks") == 0
    with pytest.raises(ConflictError, match="only a leased or running task"):
        await store.write(lambda tx: q.acquire_lock(tx, "default", "y", lt.task.id, 1000))


async def test_paused_task_is_skipped_until_resumed(store: Store, dep: str) -> None:
    t = await submit(store, dep)
    await store.write(lambda tx: q.pause_task(tx, t.id, None, "wait for review"))
    assert await lease(store, dep) == []
    assert await store.write(lambda tx: q.is_held(tx, t.id))
    assert await store.write(lambda tx: q.wait_reason(tx, q.get_task(tx, t.id))) == "held"
    await store.write(lambda tx: q.resume_task(tx, t.id))
    assert [g.task.id for g in await lease(store, dep)] == [t.id]
    types = [
        r["type"]
        for r in await store.all("SELECT type FROM events WHERE task_id = ? ORDER BY seq", (t.id,))
    ]
    assert types == ["task.queued", "task.held", "task.resumed", "task.leased"]


async def test_hold_with_a_deadline_reads_as_not_held_once_passed(store: Store, dep: str) -> None:
    now = await store.write(lambda tx: tx.now_ms)
    t = await submit(store, dep)
    await store.write(lambda tx: q.pause_task(tx, t.id, now + 10_000, None))
    assert await lease(store, dep, now_ms=now) == []
    assert [g.task.id for g in await lease(store, dep, now_ms=now + 10_000)] == [t.id]


async def test_running_task_suspended_on_resume_wakes_on_resume_or_deadline(
    store: Store, dep: str
) -> None:
    now = await store.write(lambda tx: tx.now_ms)
    t = await submit(store, dep)
    [lt] = await lease(store, dep)
    await store.write(lambda tx: q.pause_task(tx, t.id, now + 60_000, "hold"))
    assert await store.write(lambda tx: q.is_held(tx, t.id))
    row = await store.write(lambda tx: q.suspend_task(tx, t.id, lt.lease_id, "resume"))
    assert row.state == "waiting"
    await store.write(
        lambda tx: q.write_inbox(tx, t.id, "resume", None, None)
    )  # nothing else wakes it
    assert (await store.one("SELECT state FROM tasks WHERE id = ?", (t.id,))) == {
        "state": "waiting"
    }
    assert await store.write(lambda tx: q.wake_expired_holds(tx, now + 1_000)) == []
    assert await store.write(lambda tx: q.wake_expired_holds(tx, now + 60_000)) == [t.id]
    row2 = await store.one("SELECT state, priority, held FROM tasks WHERE id = ?", (t.id,))
    assert row2 == {"state": "queued", "priority": 0, "held": 0}


async def test_suspend_on_resume_after_the_hold_was_lifted_requeues_at_once(
    store: Store, dep: str
) -> None:
    t = await submit(store, dep)
    [lt] = await lease(store, dep)
    await store.write(lambda tx: q.pause_task(tx, t.id, None, None))
    await store.write(lambda tx: q.resume_task(tx, t.id))
    row = await store.write(lambda tx: q.suspend_task(tx, t.id, lt.lease_id, "resume"))
    assert row.state == "queued"


async def test_deployment_hold_holds_unfinished_tasks_and_resume_clears_only_its_own(
    store: Store, dep: str
) -> None:
    own = await submit(store, dep, "paused by itself")
    await store.write(lambda tx: q.pause_task(tx, own.id, None, "mine"))
    a = await submit(store, dep, "a")
    b = await submit(store, dep, "b")
    [la, lb] = await lease(store, dep)
    await store.write(
        lambda tx: q.suspend_task(tx, b.id, lb.lease_id, "resume")
    )  # not held yet: requeued
    n = await store.write(lambda tx: q.hold_deployment(tx, dep, None, "incident"))
    assert n == 2
    assert await store.write(lambda tx: q.is_held(tx, a.id))
    await store.write(lambda tx: q.suspend_task(tx, a.id, la.lease_id, "resume"))
    assert await lease(store, dep) == []
    assert await store.write(lambda tx: q.resume_deployment_hold(tx, dep)) == 2
    rows = {r["id"]: r for r in await store.all("SELECT id, state, held FROM tasks")}
    assert rows[own.id]["held"] == 1 and rows[a.id] == {
        "id": a.id,
        "state": "queued",
        "held": 0,
    }
    assert {g.task.id for g in await lease(store, dep)} == {a.id, b.id}
