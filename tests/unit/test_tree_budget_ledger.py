"""A tree budget's ledger in the Store, on both engines: the children one turn starts split what is
left, a running child's unused reservation is not left for others, a grandchild gets its share of
its parent's reservation, and a child's end settles its reservation to what it used."""

from __future__ import annotations

from typing import Any

import pytest

from agen.domain import TaskRow
from agen.hub import queue as q
from agen.hub.queue.delegation import submit_child
from agen.store import Store, Tx, loads
from agen.wire.delegation import SubmitChildTaskRequest
from tests.unit.queue_helpers import add_deployment, add_run, new_task


@pytest.fixture
async def dep(store: Store) -> str:
    return await store.write(lambda tx: add_deployment(tx))


async def running(store: Store, dep: str, task_id: str, used: int) -> tuple[str, str]:
    """Lease and start ``task_id``, give it a run that used ``used`` tokens: (lease id, run id)."""

    def fn(tx: Tx) -> tuple[str, str]:
        q.lease_tasks(
            tx,
            deployment_id=dep,
            nest_id="n",
            instance_id="i",
            limit=50,
            lease_ms=30_000,
            start=True,
        )  # this task, and any other queued one (each keeps its lease)
        lease_id = tx.scalar("SELECT lease_id FROM tasks WHERE id = ?", (task_id,))
        assert lease_id is not None
        run_id = add_run(tx, task_id)
        tx.execute(
            "UPDATE runs SET input_tokens = ?, output_tokens = 0 WHERE id = ?", (used, run_id)
        )
        return str(lease_id), run_id

    return await store.write(fn)


async def children(
    store: Store, parent: str, run_id: str, turn: int, n: int
) -> list[tuple[str, int]]:
    """``n`` children started in one turn of ``run_id``: (task id, its token reservation) each."""
    out = []
    for i in range(n):
        req = SubmitChildTaskRequest(
            parent_task_id=parent,
            deployment="d",
            input=f"part {i}",
            call_key=f"start:{run_id}.{turn}.{i}",
            siblings=n,
        )

        def fn(tx: Tx, req: SubmitChildTaskRequest = req) -> TaskRow:
            return submit_child(tx, req, None)[0]

        row = await store.write(fn)
        out.append((row.id, reserved(row.overrides)))
    return out


def reserved(overrides: Any) -> int:
    return int(loads(overrides)["budget"]["maxTokensPerRun"])


async def test_children_of_one_turn_split_the_tree_budget_and_reservations_settle_at_their_end(
    store: Store, dep: str
) -> None:
    root, _ = await store.write(
        lambda tx: q.submit_task(
            tx, new_task(dep, "lead", overrides={"budget": {"maxTokensPerRun": 660}})
        )
    )
    _, root_run = await running(store, dep, root.id, used=60)
    four = await children(store, root.id, root_run, 1, 4)
    assert [r for _, r in four] == [150] * 4  # 600 left, four ways
    (a, _), (b, _), _c, _d = four
    _, a_run = await running(store, dep, a, used=40)
    # a's grandchild: 110 of a's 150 are left; at the root, b, c and d still hold 450 of the 600
    [(_, grand)] = await children(store, a, a_run, 1, 1)
    assert grand == 110
    b_lease, _ = await running(store, dep, b, used=30)
    await store.write(lambda tx: q.complete_task(tx, b, b_lease, status="succeeded", outcome=None))
    # b ended using 30 of its 150: the other 120 are free again (660 - 60 - 40 - 30 - a's 110
    # unused - c's and d's 300), and a new turn's one child gets them
    [(_, late)] = await children(store, root.id, root_run, 2, 1)
    assert late == 120
