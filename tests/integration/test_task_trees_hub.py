"""Trees and queue modes through the Hub's RPCs, on both store engines: GetTaskTree, tree and graceful
CancelTask (with an injected clock), PauseTask/ResumeTask with tree, and the four queue modes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.errors import InvalidError
from agen.hub import queue as q
from agen.hub.auth import LOCAL_ADMIN
from agen.hub.queue import trees
from agen.hub.rpc.tasks import submit
from agen.hub.service import Hub
from agen.store import Store
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import (
    CancelTaskRequest,
    GetTaskTreeRequest,
    PauseTaskRequest,
    ResumeTaskRequest,
    SubmitTaskRequest,
)
from tests.fleet_helpers import files_b64, write_bundle


class Clock:
    """The Hub's injected clock: graceful cancel's grace period runs on it, not on real time."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


async def _hub(
    store: Store, tmp_path: Path, queue_mode: str = "followup"
) -> tuple[Hub, Client, Clock]:
    clock = Clock(1_800_000_000_000)
    hub = Hub(store, clock=clock)
    client = Client.in_process(hub)
    bundle = write_bundle(
        tmp_path / "b",
        "worker",
        config={
            "kind": "pool",
            "scale": {"min": 0, "max": 2},
            "conversations": {"queueMode": queue_mode},
        },
    )
    await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
    return hub, client, clock


async def _submit(hub: Hub, text: str, parent: str | None = None, **kw: Any) -> str:
    req = SubmitTaskRequest(deployment="worker", input=text, **kw)
    return (await submit(hub, LOCAL_ADMIN, req, parent_task_id=parent)).task.id


async def _lease(store: Store) -> dict[str, str]:
    dep = await store.scalar("SELECT id FROM deployments WHERE name = 'worker'")
    rows = await store.write(
        lambda tx: q.lease_tasks(
            tx,
            deployment_id=str(dep),
            nest_id="n",
            instance_id="i",
            limit=50,
            lease_ms=60_000,
            start=True,
        )
    )
    return {row.task.id: row.lease_id for row in rows}


async def _state(store: Store, task_id: str) -> str:
    return str(await store.scalar("SELECT state FROM tasks WHERE id = ?", (task_id,)))


async def test_get_task_tree_returns_every_task_of_the_tree_from_any_of_its_tasks(
    store: Store, tmp_path: Path
) -> None:
    hub, client, _ = await _hub(store, tmp_path)
    root = await _submit(hub, "coordinate")
    kids = [await _submit(hub, f"research {i}", root) for i in range(3)]
    leaf = await _submit(hub, "fetch", kids[0])
    await _submit(hub, "unrelated")
    tree = await client.call(r.GetTaskTree, GetTaskTreeRequest(id=leaf))
    assert tree.root_task_id == root
    assert [n.task.id for n in tree.tasks] == [root, *kids, leaf]
    assert [n.task.depth for n in tree.tasks] == [0, 1, 1, 1, 2]
    assert tree.tasks[0].unfinished_children == 3
    assert tree.tasks[1].task.parent_task_id == root


async def test_hard_tree_cancel_stops_the_whole_tree(store: Store, tmp_path: Path) -> None:
    hub, client, _ = await _hub(store, tmp_path)
    root = await _submit(hub, "root", on_parent_end="abandon")
    child = await _submit(hub, "child", root)
    await _lease(store)
    stopped: list[str] = []
    hub.on_cancel(stopped.append)
    resp = await client.call(r.CancelTask, CancelTaskRequest(id=child, tree=True))
    assert resp.task.state == "cancelled"
    assert await _state(store, root) == "cancelled"
    assert set(stopped) == {root, child}  # running tasks get the in-process stop hint


async def test_graceful_tree_cancel_gives_a_wrap_up_turn_then_stops_stragglers_after_the_grace(
    store: Store, tmp_path: Path
) -> None:
    hub, client, clock = await _hub(store, tmp_path)
    root = await _submit(hub, "root")
    quick = await _submit(hub, "wraps up in time", root)
    slow = await _submit(hub, "never wraps up", root)
    leases = await _lease(store)

    async def a_run_that_wraps_up() -> None:
        """What the runner does with the wrap-up request: it calls finish, the task succeeds."""
        seq = 0
        while not await store.scalar(
            "SELECT 1 FROM run_inbox WHERE task_id = ? AND kind = 'cancel'", (quick,)
        ):
            seq = await store.wait_for_events(seq, 1.0)  # the request writes task.cancelling
        await store.write(
            lambda tx: q.complete_task(
                tx, quick, leases[quick], status="succeeded", outcome={"status": "done"}
            )
        )

    async def the_grace_passes() -> None:
        seq = 0
        while await _state(store, quick) != "succeeded":
            seq = await store.wait_for_events(seq, 1.0)
        assert await _state(store, slow) == "running"  # still inside its grace
        clock.now += 30_000

    cancel = asyncio.ensure_future(
        client.call(
            r.CancelTask,
            CancelTaskRequest(id=root, tree=True, mode="graceful", grace_period_seconds=30),
        )
    )
    await asyncio.wait_for(asyncio.gather(a_run_that_wraps_up(), the_grace_passes()), 30)
    resp = await asyncio.wait_for(cancel, 30)
    assert resp.task.state == "cancelled"
    assert await _state(store, quick) == "succeeded"  # ended however it finished, not cancelled
    assert await _state(store, slow) == "cancelled"


async def test_a_grace_period_without_graceful_mode_is_refused(
    store: Store, tmp_path: Path
) -> None:
    hub, client, _ = await _hub(store, tmp_path)
    task = await _submit(hub, "x")
    with pytest.raises(InvalidError, match="graceful only"):
        await client.call(r.CancelTask, CancelTaskRequest(id=task, grace_period_seconds=5))


async def test_tree_pause_and_resume_hold_and_release_every_task(
    store: Store, tmp_path: Path
) -> None:
    hub, client, _ = await _hub(store, tmp_path)
    root = await _submit(hub, "root")
    child = await _submit(hub, "child", root)
    await client.call(r.PauseTask, PauseTaskRequest(id=root, tree=True, reason="review"))
    assert await _lease(store) == {}  # nothing of the held tree is leased
    assert await store.scalar("SELECT COUNT(*) FROM tasks WHERE held = 1") == 2
    await client.call(r.ResumeTask, ResumeTaskRequest(id=child, tree=True))
    assert set(await _lease(store)) == {root, child}


async def test_followup_queues_a_second_task_behind_the_running_one(
    store: Store, tmp_path: Path
) -> None:
    hub, _client, _ = await _hub(store, tmp_path)
    first = await _submit(hub, "one", conversation_key="c")
    await _lease(store)
    second = await _submit(hub, "two", conversation_key="c")
    assert second != first and await _state(store, second) == "queued"


async def test_collect_merges_into_the_queued_task_once_per_idempotency_key(
    store: Store, tmp_path: Path
) -> None:
    hub, _client, _ = await _hub(store, tmp_path, "collect")
    running = await _submit(hub, "one", conversation_key="c")
    await _lease(store)
    queued = await _submit(hub, "two", conversation_key="c")
    assert queued != running
    merged = await _submit(hub, "three", conversation_key="c", idempotency_key="k3")
    again = await _submit(hub, "three", conversation_key="c", idempotency_key="k3")
    assert merged == again == queued
    assert await store.scalar("SELECT input FROM tasks WHERE id = ?", (queued,)) == "two\n\nthree"
    assert await store.scalar("SELECT COUNT(*) FROM tasks") == 2


async def test_steer_hands_the_input_to_the_running_task(store: Store, tmp_path: Path) -> None:
    hub, _client, _ = await _hub(store, tmp_path, "steer")
    running = await _submit(hub, "write the report", conversation_key="c")
    await _lease(store)
    steered = await _submit(hub, "in French, please", conversation_key="c")
    assert steered == running
    row = await store.one("SELECT kind, payload FROM run_inbox WHERE task_id = ?", (running,))
    assert row is not None and row["kind"] == "steer" and "in French" in row["payload"]
    assert await store.scalar("SELECT COUNT(*) FROM tasks") == 1


async def test_interrupt_asks_the_running_task_to_wrap_up_and_queues_the_new_one(
    store: Store, tmp_path: Path
) -> None:
    hub, _client, _clock = await _hub(store, tmp_path, "interrupt")
    running = await _submit(hub, "long job", conversation_key="c")
    await _lease(store)
    new = await _submit(hub, "stop, do this instead", conversation_key="c")
    assert new != running and await _state(store, new) == "queued"
    assert (
        await store.scalar("SELECT kind FROM run_inbox WHERE task_id = ?", (running,)) == "cancel"
    )
    deadline = await store.scalar("SELECT cancel_at_ms FROM tasks WHERE id = ?", (running,))
    assert deadline is not None
    await store.write(lambda tx: trees.cancel_overdue(tx, int(deadline)))
    assert await _state(store, running) == "cancelled"
    assert set(await _lease(store)) == {new}  # the conversation is free: the new task runs next


async def test_delivery_overrides_the_queue_mode_for_one_submission(
    store: Store, tmp_path: Path
) -> None:
    hub, _client, _ = await _hub(store, tmp_path)  # the deployment follows up
    running = await _submit(hub, "one", conversation_key="c")
    await _lease(store)
    assert await _submit(hub, "steer it", conversation_key="c", delivery="steer") == running
    followed = await _submit(hub, "then this", conversation_key="c")
    assert followed != running
