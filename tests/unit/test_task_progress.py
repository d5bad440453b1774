from __future__ import annotations

from functools import partial

from agen.hub import queue as q
from agen.hub.queue.progress import report_progress
from agen.store import Store, Tx, loads
from tests.unit.queue_helpers import add_deployment, new_task


async def test_progress_keeps_the_latest_value_and_writes_one_event_per_ten_second_bucket(
    store: Store,
) -> None:
    dep = await store.write(lambda tx: add_deployment(tx, "d"))
    task, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, "hi")))
    for pct in (10, 20, 30):
        assert await store.write(
            partial(report_progress, task_id=task.id, progress={"note": "n", "percent": pct})
        )
    row = await store.one("SELECT progress FROM tasks WHERE id = ?", (task.id,))
    assert row is not None and loads(row["progress"])["percent"] == 30
    events = await store.all("SELECT data FROM events WHERE type = 'task.progress'")
    assert 1 <= len(events) <= 2  # three reports within a few ms: one bucket (two if it straddled)

    def later(tx: Tx) -> bool:
        tx.now_ms += 10_000
        return report_progress(tx, task.id, {"note": "later", "percent": 90})

    assert await store.write(later)
    assert (
        await store.scalar("SELECT COUNT(*) FROM events WHERE type = 'task.progress'")
        == len(events) + 1
    )


async def test_progress_on_an_ended_or_unknown_task_is_a_no_op(store: Store) -> None:
    dep = await store.write(lambda tx: add_deployment(tx, "d"))
    task, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, "hi")))
    await store.write(lambda tx: q.cancel_task(tx, task.id, by="test", reason="done with it"))
    assert not await store.write(lambda tx: report_progress(tx, task.id, {"note": "late"}))
    assert not await store.write(lambda tx: report_progress(tx, "no-such-task", {"note": "x"}))
    assert await store.scalar("SELECT COUNT(*) FROM events WHERE type = 'task.progress'") == 0
