"""What a deployment's kind means for the queue and leasing (seed 000 §4–§5)."""

from __future__ import annotations

from typing import Any

from agen.domain import LeasedTaskRow, TaskRow
from agen.hub import queue as q
from agen.hub.queue.nest_leasing import lease_for_nest
from agen.store import Store
from tests.unit.queue_helpers import add_deployment, new_task


async def _submit(store: Store, dep: str, **kw: Any) -> TaskRow:
    row, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, **kw)))
    return row


async def _lease(store: Store, dep: str, instance: str, limit: int = 4) -> list[LeasedTaskRow]:
    return await store.write(
        lambda tx: lease_for_nest(
            tx, deployment_id=dep, nest_id="n1", instance_id=instance, limit=limit, lease_ms=30_000
        )
    )


async def test_singleton_tasks_share_its_one_conversation_whatever_key_they_carry(
    store: Store,
) -> None:
    dep = await store.write(
        lambda tx: add_deployment(tx, kind="singleton", scale={"min": 1, "max": 1})
    )
    keys = {
        (await _submit(store, dep, conversation_key=k)).conversation_key for k in ("a", "b", None)
    }
    assert keys == {q.SINGLETON_KEY}
    # one conversation: the second task waits for the first instead of running beside it
    assert [t.task.input for t in await _lease(store, dep, "i1")] == ["hi"]
    assert await _lease(store, dep, "i2") == []


async def test_pool_tasks_keep_their_own_conversation_keys(store: Store) -> None:
    dep = await store.write(lambda tx: add_deployment(tx, kind="pool"))
    assert (await _submit(store, dep, conversation_key="a")).conversation_key == "api:a"
    assert (await _submit(store, dep)).conversation_key is None


async def test_task_kind_instance_leases_exactly_one_task_ever(store: Store) -> None:
    dep = await store.write(lambda tx: add_deployment(tx, kind="task", scale={"min": 0, "max": 3}))
    ids = [(await _submit(store, dep)).id for _ in range(3)]
    first = await _lease(store, dep, "i1", limit=4)
    assert [t.task.id for t in first] == ids[:1]
    await store.write(
        lambda tx: q.complete_task(
            tx,
            first[0].task.id,
            first[0].lease_id,
            status="succeeded",
            outcome={"status": "succeeded", "summary": "ok"},
        )
    )
    assert (
        await _lease(store, dep, "i1", limit=4) == []
    )  # its one task is done: it leases nothing more
    assert [t.task.id for t in await _lease(store, dep, "i2")] == ids[1:2]
    assert [t.task.id for t in await _lease(store, dep, "i3")] == ids[2:3]


async def test_pool_instance_leases_up_to_its_free_slots(store: Store) -> None:
    dep = await store.write(lambda tx: add_deployment(tx, kind="pool"))
    for _ in range(3):
        await _submit(store, dep)
    assert len(await _lease(store, dep, "i1", limit=4)) == 3
