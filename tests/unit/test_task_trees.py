"""Task trees in the Store, on both engines: on_parent_end, tree cancel, tree hold, graceful deadlines."""

from __future__ import annotations

from typing import Any

import pytest

from agen.domain import LeasedTaskRow, TaskRow
from agen.hub import queue as q
from agen.hub.queue import trees
from agen.store import Store, Tx, loads
from tests.unit.queue_helpers import add_deployment, new_task

LEASE = 30_000


@pytest.fixture
async def dep(store: Store) -> str:
    return await store.write(lambda tx: add_deployment(tx))


async def submit(store: Store, dep: str, text: str, **kw: Any) -> TaskRow:
    row, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, text, **kw)))
    return row


async def state(store: Store, task_id: str) -> str:
    return str(await store.scalar("SELECT state FROM tasks WHERE id = ?", (task_id,)))


async def lease_all(store: Store, dep: str) -> list[LeasedTaskRow]:
    return await store.write(
        lambda tx: q.lease_tasks(
            tx,
            deployment_id=dep,
            nest_id="n",
            instance_id="i",
            limit=50,
            lease_ms=LEASE,
            start=True,
        )
    )


async def test_a_parent_ending_cancels_its_joined_branch_but_not_its_async_children(
    store: Store, dep: str
) -> None:
    root = await submit(store, dep, "root")
    child = await submit(store, dep, "child", parent_task_id=root.id)
    grandchild = await submit(store, dep, "grandchild", parent_task_id=child.id)
    replying = await submit(store, dep, "async", parent_task_id=root.id, reply_deployment="d")
    [leased] = [t for t in await lease_all(store, dep) if t.task.id == root.id]
    await store.write(
        lambda tx: q.complete_task(tx, root.id, leased.lease_id, status="succeeded", outcome=None)
    )
    assert await state(store, root.id) == "succeeded"
    assert await state(store, child.id) == "cancelled"
    assert await state(store, grandchild.id) == "cancelled"  # the whole branch unwinds
    assert await state(store, replying.id) != "cancelled"  # an async child outlives its parent
    why = await store.scalar("SELECT outcome FROM tasks WHERE id = ?", (child.id,))
    assert f"its parent task {root.id} ended (succeeded)" in str(why)


async def test_on_parent_end_abandon_leaves_the_children_running(store: Store, dep: str) -> None:
    root = await submit(store, dep, "root", on_parent_end="abandon")
    child = await submit(store, dep, "child", parent_task_id=root.id)
    await store.write(lambda tx: q.cancel_task(tx, root.id, by="test"))
    assert await state(store, root.id) == "cancelled"
    assert await state(store, child.id) == "queued"


async def test_tree_cancel_from_any_task_ends_every_unfinished_task_async_ones_too(
    store: Store, dep: str
) -> None:
    root = await submit(store, dep, "root", on_parent_end="abandon")
    child = await submit(store, dep, "child", parent_task_id=root.id)
    replying = await submit(store, dep, "async", parent_task_id=child.id, reply_deployment="d")
    other = await submit(store, dep, "another tree")
    ended = await store.write(lambda tx: trees.cancel_scope(tx, replying.id, tree=True, by="test"))
    assert set(ended) == {root.id, child.id, replying.id}
    for t in (root, child, replying):
        assert await state(store, t.id) == "cancelled"
    assert await state(store, other.id) == "queued"


async def test_tree_pause_holds_every_task_and_tree_resume_wakes_the_suspended_ones(
    store: Store, dep: str
) -> None:
    root = await submit(store, dep, "root")
    child = await submit(store, dep, "child", parent_task_id=root.id)
    leased = {t.task.id: t for t in await lease_all(store, dep)}
    held = await store.write(lambda tx: trees.pause_tree(tx, child.id, None, "lunch"))
    assert set(held) == {root.id, child.id}
    assert all(await store.write(lambda tx: [q.is_held(tx, i) for i in held]))
    # the running root notices at its next turn and suspends on "resume"
    await store.write(lambda tx: q.suspend_task(tx, root.id, leased[root.id].lease_id, "resume"))
    assert await state(store, root.id) == "waiting"
    await store.write(lambda tx: trees.resume_tree(tx, root.id))
    assert await state(store, root.id) == "queued"
    assert not any(await store.write(lambda tx: [q.is_held(tx, i) for i in held]))


async def test_graceful_cancel_asks_running_tasks_to_wrap_up_and_the_sweep_stops_stragglers(
    store: Store, dep: str
) -> None:
    root = await submit(store, dep, "root", on_parent_end="abandon")
    running = await submit(store, dep, "running", parent_task_id=root.id)
    await lease_all(store, dep)
    queued = await submit(store, dep, "queued", parent_task_id=root.id)

    def begin(tx: Tx) -> tuple[list[str], int]:
        return (
            trees.begin_graceful_cancel(tx, root.id, tree=True, grace_ms=5_000, by="me"),
            tx.now_ms,
        )

    live, at = await store.write(begin)
    assert set(live) == {root.id, running.id}
    assert await state(store, queued.id) == "cancelled"  # no live turn to give it
    kinds = await store.all(
        "SELECT task_id, kind FROM run_inbox WHERE kind = 'cancel' ORDER BY task_id"
    )
    assert {r["task_id"] for r in kinds} == {root.id, running.id}
    assert await store.write(lambda tx: trees.cancel_overdue(tx, at + 4_999)) == []
    assert await state(store, running.id) == "running"
    stopped = await store.write(lambda tx: trees.cancel_overdue(tx, at + 5_000))
    assert set(stopped) == {root.id, running.id}
    assert await state(store, running.id) == "cancelled"


async def test_cancelling_a_running_task_ends_its_runs_record_spans_and_event_included(
    store: Store, dep: str
) -> None:
    """The Hub's end of a run is the run's end in its trace too: its open spans close with status
    cancelled and run.finished is written (what `agen trace` and the OTLP exporter follow)."""
    from agen.runner.records import SPAN_SQL
    from tests.unit.queue_helpers import add_run

    task = await submit(store, dep, "work")
    await lease_all(store, dep)

    def open_run(tx: Tx) -> str:
        run_id = add_run(tx, task.id)
        for span_id, name in ((run_id, "agen.run"), (f"{run_id}x", "agen.tool")):
            tx.execute(
                SPAN_SQL,
                (
                    span_id,
                    "t" * 32,
                    None,
                    run_id,
                    task.id,
                    "default",
                    "d",
                    name,
                    "unfinished",
                    "{}",
                    None,
                    tx.now_ms,
                    None,
                ),
            )
        return run_id

    run_id = await store.write(open_run)
    await store.write(lambda tx: q.cancel_task(tx, task.id, by="test"))
    spans = await store.all("SELECT status, ended_ms FROM spans WHERE run_id = ?", (run_id,))
    assert [(s["status"], s["ended_ms"] is not None) for s in spans] == [("cancelled", True)] * 2
    finished = await store.all(
        "SELECT data FROM events WHERE run_id = ? AND type = 'run.finished'", (run_id,)
    )
    assert [loads(e["data"])["status"] for e in finished] == ["cancelled"]
