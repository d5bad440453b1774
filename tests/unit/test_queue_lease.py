"""Leasing, fencing, expiry, release and ordering of the durable task queue."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agen.domain import LeasedTaskRow, TaskRow
from agen.errors import FencedError
from agen.hub import queue as q
from agen.hub.fleet.instances import register_nest, void_nest_work
from agen.runner.records import Checkpoint, open_run, write_checkpoint
from agen.runner.types import RunRequest
from agen.store import Store, Tx
from tests.unit.queue_helpers import add_deployment, add_run, new_task, resume_run

LEASE = 30_000


async def setup(store: Store, **kw: Any) -> str:
    return await store.write(lambda tx: add_deployment(tx, **kw))


async def submit(store: Store, dep: str, text: str = "hi", **kw: Any) -> TaskRow:
    row, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, text, **kw)))
    return row


async def lease(
    store: Store, dep: str, limit: int = 10, now_ms: int | None = None
) -> list[LeasedTaskRow]:
    return await store.write(
        lambda tx: q.lease_tasks(
            tx,
            deployment_id=dep,
            nest_id="n1",
            instance_id="i1",
            limit=limit,
            lease_ms=LEASE,
            now_ms=now_ms,
        )
    )


async def test_lease_gives_fresh_lease_id_and_counts_attempt(store: Store) -> None:
    dep = await setup(store)
    t = await submit(store, dep)
    [got] = await lease(store, dep)
    assert got.task.id == t.id and got.task.state == "leased" and got.task.attempts == 1
    assert got.lease_id and got.locks == {}
    assert await lease(store, dep) == []
    events = await store.all("SELECT type FROM events WHERE task_id = ? ORDER BY seq", (t.id,))
    assert [e["type"] for e in events] == ["task.queued", "task.leased"]


async def test_stale_lease_cannot_complete_a_re_leased_task(store: Store) -> None:
    dep = await setup(store)
    t = await submit(store, dep)
    [first] = await lease(store, dep)
    far = (first.task.lease_expires_ms or 0) + 1
    await store.write(lambda tx: q.expire_leases(tx, far))
    [second] = await lease(store, dep, now_ms=far)
    assert second.lease_id != first.lease_id
    with pytest.raises(
        FencedError, match=f"lease {first.lease_id} of task {t.id} is no longer current"
    ):
        await store.write(
            lambda tx: q.complete_task(
                tx, t.id, first.lease_id, status="succeeded", outcome={"status": "done"}
            )
        )
    with pytest.raises(FencedError):
        await store.write(lambda tx: q.extend_lease(tx, t.id, first.lease_id, LEASE))
    done = await store.write(
        lambda tx: q.complete_task(
            tx,
            t.id,
            second.lease_id,
            status="succeeded",
            outcome={"status": "done", "summary": "ok"},
        )
    )
    assert done.state == "succeeded" and done.finished_ms


async def test_completing_twice_with_the_same_lease_returns_the_stored_task(store: Store) -> None:
    dep = await setup(store)
    await submit(store, dep)
    [t] = await lease(store, dep)
    a = await store.write(
        lambda tx: q.complete_task(
            tx, t.task.id, t.lease_id, status="failed", outcome=None, error="boom"
        )
    )
    b = await store.write(
        lambda tx: q.complete_task(
            tx, t.task.id, t.lease_id, status="failed", outcome=None, error="boom"
        )
    )
    assert a.state == b.state == "failed" and a.finished_ms == b.finished_ms
    assert await store.scalar("SELECT COUNT(*) FROM events WHERE type = 'task.failed'") == 1


async def test_mark_running_and_extend_lease_move_the_expiry(store: Store) -> None:
    dep = await setup(store)
    await submit(store, dep)
    [t] = await lease(store, dep)
    running = await store.write(lambda tx: q.mark_running(tx, t.task.id, t.lease_id))
    assert running.state == "running" and running.started_ms
    expiry = await store.write(lambda tx: q.extend_lease(tx, t.task.id, t.lease_id, 10 * LEASE))
    assert expiry > (t.task.lease_expires_ms or 0)
    assert (
        await store.write(lambda tx: q.expire_leases(tx, (t.task.lease_expires_ms or 0) + 1)) == []
    )


async def test_lease_expiry_requeues_and_fifth_expiry_fails_task_and_fences_run(
    store: Store,
) -> None:
    dep = await setup(store)
    t = await submit(store, dep)
    run_id = await store.write(lambda tx: add_run(tx, t.id))
    now = t.created_ms
    for attempt in range(1, q.MAX_ATTEMPTS + 1):
        [got] = await lease(store, dep, now_ms=now)
        assert got.task.attempts == attempt
        await store.write(lambda tx, n=now: resume_run(tx, run_id, t.id, n))  # type: ignore[misc]
        now = (got.task.lease_expires_ms or 0) + 1
        [res] = await store.write(lambda tx, n=now: q.expire_leases(tx, n))  # type: ignore[misc]
        assert res.action == ("failed" if attempt == q.MAX_ATTEMPTS else "requeued")
    row = await store.one("SELECT state, error, outcome FROM tasks WHERE id = ?", (t.id,))
    assert row is not None and row["state"] == "failed" and "5 attempts" in row["error"]
    assert '"max_attempts"' in row["outcome"]
    run = await store.one("SELECT status, epoch, finished_ms FROM runs WHERE id = ?", (run_id,))
    assert run is not None
    assert (
        run == {"status": "failed", "epoch": q.MAX_ATTEMPTS + 1, "finished_ms": run["finished_ms"]}
        and run["finished_ms"]
    )
    logs = await store.all("SELECT message FROM deployment_logs WHERE deployment = 'd'")
    assert len(logs) == q.MAX_ATTEMPTS and all("expired" in r["message"] for r in logs)
    assert await lease(store, dep, now_ms=now) == []


async def test_release_by_a_host_that_could_not_take_it_does_not_count_an_attempt(
    store: Store,
) -> None:
    dep = await setup(store)
    t = await submit(store, dep)
    for _ in range(q.MAX_ATTEMPTS + 2):
        [got] = await lease(store, dep)
        assert got.task.attempts == 1
        back = await store.write(
            lambda tx, g=got: q.release_task(  # type: ignore[misc]
                tx, t.id, g.lease_id, count_attempt=False, reason="instance full"
            )
        )
        assert back.state == "queued" and back.attempts == 0 and back.lease_id is None
    counted = (await lease(store, dep))[0]
    run_id = await store.write(lambda tx: add_run(tx, t.id))
    await store.write(lambda tx: resume_run(tx, run_id, t.id, tx.now_ms))
    back = await store.write(
        lambda tx: q.release_task(tx, t.id, counted.lease_id, count_attempt=True)
    )
    assert back.attempts == 1
    log = await store.all("SELECT message FROM deployment_logs ORDER BY seq")
    assert "instance full (attempt not counted)" in log[0]["message"]


async def test_leases_lost_before_the_run_started_are_the_hosts_and_a_poison_task_still_ends(
    store: Store,
) -> None:
    """A host that dies after leasing, before the run opens (restarted, its lease expired, or its
    instance died), costs the task no attempt; MAX_LOST_BEFORE_START such losses end it (issue #31)."""
    dep = await setup(store)
    t = await submit(store, dep)
    nest_id = await store.write(lambda tx: register_nest(tx, "n1", capacity=4))

    async def lease_on_nest() -> LeasedTaskRow:
        [got] = await store.write(
            lambda tx: q.lease_tasks(
                tx, deployment_id=dep, nest_id=nest_id, instance_id="i1", limit=1, lease_ms=LEASE
            )
        )
        assert got.task.attempts == 1  # the lease in hand is the only one that counts
        return got

    for lost in range(1, q.MAX_LOST_BEFORE_START):
        got = await lease_on_nest()
        if lost % 3 == 0:  # its lease ran out while the host was gone
            await store.write(
                lambda tx, g=got: q.expire_leases(tx, (g.task.lease_expires_ms or 0) + 1)  # type: ignore[misc]
            )
        elif lost % 3 == 1:  # the Nest came back and enrolled again
            await store.write(lambda tx: register_nest(tx, "n1", capacity=4))
        else:  # the host of the instance died; the Nest gave the task back
            await store.write(
                lambda tx, g=got: q.release_task(tx, t.id, g.lease_id, count_attempt=True)  # type: ignore[misc]
            )
        row = await store.one(
            "SELECT state, attempts, lost_before_start FROM tasks WHERE id = ?", (t.id,)
        )
        assert row == {"state": "queued", "attempts": 0, "lost_before_start": lost}
    await lease_on_nest()
    await store.write(lambda tx: register_nest(tx, "n1", capacity=4))
    row = await store.one("SELECT state, error, outcome FROM tasks WHERE id = ?", (t.id,))
    assert row is not None and row["state"] == "failed"
    assert row["error"] == (
        f"task failed: its host was lost {q.MAX_LOST_BEFORE_START} times after leasing it and before"
        f" its run started (max {q.MAX_LOST_BEFORE_START}); the task may be what stops its host;"
        " last: nest n1 restarted"
    )
    logs = await store.all(
        "SELECT message FROM deployment_logs WHERE deployment = 'd' ORDER BY seq"
    )
    assert all("not an attempt" in r["message"] for r in logs), logs


async def test_a_lease_whose_run_started_without_progress_is_an_attempt(store: Store) -> None:
    dep = await setup(store)
    t = await submit(store, dep)
    run_id = await store.write(lambda tx: add_run(tx, t.id))
    [got] = await lease(store, dep)
    await store.write(lambda tx: resume_run(tx, run_id, t.id, tx.now_ms))
    await store.write(lambda tx: q.release_task(tx, t.id, got.lease_id, count_attempt=True))
    row = await store.one("SELECT attempts, lost_before_start FROM tasks WHERE id = ?", (t.id,))
    assert row == {"attempts": 1, "lost_before_start": 0}


@pytest.mark.parametrize("how", ["expired", "revoked"])
async def test_a_lease_taken_from_a_live_holder_fences_its_run_so_its_stop_cannot_end_the_task(
    store: Store, how: str
) -> None:
    """A Nest cut off past its lease learns of the loss when the link returns and stops the run; the
    end the stopped run writes (cancelled) must not land, or the next holder would find the run ended
    and finish the task as cancelled. Taking the lease (expiry, a revoked Nest) bumps the run's epoch."""
    dep = await setup(store)
    t = await submit(store, dep)
    nest_id = await store.write(lambda tx: register_nest(tx, "a", capacity=4))
    [got] = await store.write(
        lambda tx: q.lease_tasks(
            tx, deployment_id=dep, nest_id=nest_id, instance_id="i1", limit=1, lease_ms=LEASE
        )
    )
    opened = await store.write(
        lambda tx: open_run(tx, RunRequest(input="hi", task_id=t.id), "nest-a", "fake", None)
    )
    if how == "expired":
        await store.write(lambda tx: q.expire_leases(tx, (got.task.lease_expires_ms or 0) + 1))
    else:
        await store.write(
            lambda tx: void_nest_work(tx, nest_id, "a", "revoked", count_attempt=False)
        )
    stopped = Checkpoint(
        run_id=opened.run.id,
        epoch=opened.run.epoch,
        conversation_id=opened.run.conversation_id,
        turns=0,
        next_seq=1,
        status="cancelled",
        outcome={"status": "cancelled", "reason": "cancelled", "summary": "the run was cancelled"},
    )
    with pytest.raises(FencedError):
        await store.write(lambda tx: write_checkpoint(tx, stopped))
    [again] = await lease(store, dep)
    resumed = await store.write(
        lambda tx: open_run(
            tx, RunRequest(input="hi", task_id=t.id, attempt=2), "nest-b", "fake", None
        )
    )
    assert again.task.id == t.id and resumed.resumed and not resumed.finished


async def test_priority_orders_within_a_deployment_never_across(store: Store) -> None:
    dep = await setup(store)
    other = await setup(store, name="other")
    bg = await submit(store, dep, "bg", priority="background")
    normal = await submit(store, dep, "n")
    urgent = await submit(store, dep, "u", priority="urgent")
    high = await submit(store, dep, "h", priority="high")
    await submit(store, other, "elsewhere", priority="urgent")
    got = await lease(store, dep)
    assert [g.task.id for g in got] == [urgent.id, high.id, normal.id, bg.id]
    assert [g.task.id for g in await lease(store, dep, limit=1)] == []


async def test_limit_caps_how_many_are_leased_in_submission_order(store: Store) -> None:
    dep = await setup(store)
    ids = [(await submit(store, dep, str(i))).id for i in range(5)]
    assert [g.task.id for g in await lease(store, dep, limit=2)] == ids[:2]
    assert [g.task.id for g in await lease(store, dep, limit=2)] == ids[2:4]


async def test_conversation_runs_one_task_at_a_time_in_submission_order(store: Store) -> None:
    dep = await setup(store)
    a = await submit(store, dep, "a", conversation_key="chat")
    b = await submit(store, dep, "b", conversation_key="chat", priority="urgent")
    other = await submit(store, dep, "c", conversation_key="other")
    assert a.conversation_key == "api:chat"
    got = await lease(store, dep)
    assert [g.task.id for g in got] == [a.id, other.id]  # b waits although urgent
    reason = await store.write(lambda tx: q.wait_reason(tx, q.get_task(tx, b.id)))
    assert reason == "conversation"
    await store.write(
        lambda tx: q.complete_task(tx, a.id, got[0].lease_id, status="succeeded", outcome=None)
    )
    assert [g.task.id for g in await lease(store, dep)] == [b.id]


async def test_a_waiting_task_holds_its_conversation(store: Store) -> None:
    dep = await setup(store)
    a = await submit(store, dep, "a", conversation_key="k")
    b = await submit(store, dep, "b", conversation_key="k")
    [got] = await lease(store, dep)
    await store.write(lambda tx: q.suspend_task(tx, a.id, got.lease_id, "child:x"))
    assert await lease(store, dep) == []
    assert await store.write(lambda tx: q.wait_reason(tx, q.get_task(tx, b.id))) == "conversation"


async def test_scheduled_task_does_not_hold_up_its_conversation(store: Store) -> None:
    dep = await setup(store)
    now = await store.write(lambda tx: tx.now_ms)
    later = await submit(store, dep, "later", conversation_key="k", not_before_ms=now + 60_000)
    b = await submit(store, dep, "now", conversation_key="k")
    assert [g.task.id for g in await lease(store, dep, now_ms=now)] == [b.id]
    assert (
        await store.write(lambda tx: q.wait_reason(tx, q.get_task(tx, later.id), now_ms=now))
        == "scheduled"
    )


async def test_cancel_ends_the_run_bumps_its_epoch_and_fences_the_host(store: Store) -> None:
    dep = await setup(store)
    t = await submit(store, dep)
    [got] = await lease(store, dep)
    run_id = await store.write(lambda tx: add_run(tx, t.id))
    row = await store.write(lambda tx: q.cancel_task(tx, t.id, by="alice", reason="not needed"))
    assert row.state == "cancelled"
    run = await store.one("SELECT status, epoch FROM runs WHERE id = ?", (run_id,))
    assert run == {"status": "cancelled", "epoch": 2}
    with pytest.raises(FencedError):
        await store.write(
            lambda tx: q.complete_task(tx, t.id, got.lease_id, status="succeeded", outcome=None)
        )
    again = await store.write(lambda tx: q.cancel_task(tx, t.id, by="alice"))
    assert again.state == "cancelled"
    assert await store.scalar("SELECT COUNT(*) FROM events WHERE type = 'task.cancelled'") == 1


async def test_paused_deployment_leases_nothing(store: Store) -> None:
    dep = await setup(store, paused=True)
    t = await submit(store, dep)
    assert await lease(store, dep) == []
    assert await store.write(lambda tx: q.wait_reason(tx, q.get_task(tx, t.id))) == "paused"


async def test_child_finishing_writes_parent_inbox_and_wakes_it(store: Store) -> None:
    dep = await setup(store)
    parent = await submit(store, dep, "parent", labels={"team": "a"})
    [p] = await lease(store, dep)
    child = await submit(store, dep, "child", parent_task_id=parent.id)
    assert child.root_task_id == parent.id and child.depth == 1 and '"team":"a"' in child.labels
    waiting = await store.write(
        lambda tx: q.suspend_task(tx, parent.id, p.lease_id, f"child:{child.id}")
    )
    assert waiting.state == "waiting" and waiting.attempts == 0
    [c] = await lease(store, dep)
    assert c.task.id == child.id
    await store.write(
        lambda tx: q.complete_task(
            tx,
            child.id,
            c.lease_id,
            status="succeeded",
            outcome={"status": "done", "summary": "42"},
        )
    )
    woke = await store.one("SELECT state, priority, wait_for FROM tasks WHERE id = ?", (parent.id,))
    assert woke == {"state": "queued", "priority": 0, "wait_for": None}
    inbox = await store.one(
        "SELECT kind, ref, payload FROM run_inbox WHERE task_id = ?", (parent.id,)
    )
    assert (
        inbox is not None
        and inbox["kind"] == "child"
        and inbox["ref"] == child.id
        and "42" in inbox["payload"]
    )


async def test_suspend_after_the_awaited_row_already_arrived_wakes_at_once(store: Store) -> None:
    dep = await setup(store)
    parent = await submit(store, dep, "parent")
    [p] = await lease(store, dep)
    await store.write(lambda tx: q.write_inbox(tx, parent.id, "signal", "t1", {"m": 1}))
    row = await store.write(lambda tx: q.suspend_task(tx, parent.id, p.lease_id, "signal:t1"))
    assert row.state == "queued" and row.priority == 0


async def test_inbox_row_that_does_not_match_leaves_task_waiting(store: Store) -> None:
    dep = await setup(store)
    t = await submit(store, dep)
    [got] = await lease(store, dep)
    await store.write(lambda tx: q.suspend_task(tx, t.id, got.lease_id, "child:abc"))
    await store.write(lambda tx: q.write_inbox(tx, t.id, "child", "other", None))
    assert (await store.one("SELECT state FROM tasks WHERE id = ?", (t.id,))) == {
        "state": "waiting"
    }
    await store.write(lambda tx: q.write_inbox(tx, t.id, "child", "abc", None))
    assert (await store.one("SELECT state FROM tasks WHERE id = ?", (t.id,))) == {"state": "queued"}


async def test_lease_with_start_goes_straight_to_running(store: Store) -> None:
    dep = await setup(store)
    t = await submit(store, dep)
    [got] = await store.write(
        lambda tx: q.lease_tasks(
            tx,
            deployment_id=dep,
            nest_id="n1",
            instance_id="i1",
            limit=1,
            lease_ms=LEASE,
            start=True,
        )
    )
    assert got.task.state == "running" and got.task.started_ms
    row = await store.one("SELECT state, started_ms FROM tasks WHERE id = ?", (t.id,))
    assert row == {"state": "running", "started_ms": got.task.started_ms}
    types = [
        r["type"]
        for r in await store.all("SELECT type FROM events WHERE task_id = ? ORDER BY seq", (t.id,))
    ]
    assert types == ["task.queued", "task.started"]  # the leased state was never visible: one event
    data = await store.scalar(
        "SELECT data FROM events WHERE task_id = ? AND type = 'task.started'", (t.id,)
    )
    assert json.loads(data) == {
        "lease_id": got.lease_id,
        "nest_id": "n1",
        "instance_id": "i1",
        "attempt": 1,
    }


def checkpoint_turn(tx: Tx, run_id: str, seq: int, at: int) -> None:
    """What a host's checkpoint of one model turn leaves in the store: an assistant message."""
    conv = tx.scalar("SELECT conversation_id FROM runs WHERE id = ?", (run_id,))
    tx.execute(
        "INSERT INTO messages (id, conversation_id, run_id, seq, role, content, created_ms)"
        " VALUES (?,?,?,?, 'assistant', 'step', ?)",
        (f"m{seq}", conv, run_id, seq, at),
    )


async def test_losing_the_host_after_the_run_made_progress_does_not_count_an_attempt(
    store: Store,
) -> None:
    dep = await setup(store)
    t = await submit(store, dep)
    run_id = await store.write(lambda tx: add_run(tx, t.id))
    now = t.created_ms
    for turn in range(
        q.MAX_ATTEMPTS + 2
    ):  # more host deaths than MAX_ATTEMPTS, each after a checkpoint
        [got] = await lease(store, dep, now_ms=now)
        assert got.task.attempts == 1
        await store.write(lambda tx, n=now, s=turn: checkpoint_turn(tx, run_id, s, n + 1))  # type: ignore[misc]
        now = (got.task.lease_expires_ms or 0) + 1
        if turn % 2:  # the Nest restarted (agen up was killed and started again)
            back: TaskRow | None = await store.write(
                lambda tx, g=got: q.release_task(  # type: ignore[misc]
                    tx, t.id, g.lease_id, count_attempt=True, reason="nest local restarted"
                )
            )
        else:  # the host went silent and its lease ran out
            [res] = await store.write(lambda tx, n=now: q.expire_leases(tx, n))  # type: ignore[misc]
            assert res.action == "requeued"
            back = await store.write(lambda tx: q.get_task(tx, t.id))
        assert back is not None
        assert back.state == "queued" and back.attempts == 0
    [got] = await lease(store, dep, now_ms=now)  # no progress during this lease: it is charged
    [res] = await store.write(lambda tx: q.expire_leases(tx, (got.task.lease_expires_ms or 0) + 1))
    assert res.attempts == 1
    log = [
        r["message"] for r in await store.all("SELECT message FROM deployment_logs ORDER BY seq")
    ]
    assert "nest local restarted; the run made progress (attempt not counted)" in log[1]
    assert "the run made progress, so the attempt is not counted" in log[0]
