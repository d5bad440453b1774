"""The Hub's leader loop and the local Nest, in-process over a real SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.hub.leader.loop import LeaderLoop
from agen.hub.service import Hub
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest, ScaleDeploymentRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle


async def test_two_hubs_on_one_store_file_never_both_lead(tmp_path: Path) -> None:
    a_store = await SQLiteStore.open(tmp_path / "shared.db")
    b_store = await SQLiteStore.open(tmp_path / "shared.db")
    a, b = LeaderLoop(Hub(a_store), ttl_ms=400), LeaderLoop(Hub(b_store), ttl_ms=400)
    try:
        for _ in range(10):
            await asyncio.gather(a.step(), b.step())
            assert not (a.is_leader and b.is_leader)
        assert a.is_leader != b.is_leader
        leader, follower = (a, b) if a.is_leader else (b, a)
        first_epoch = leader.epoch
        await leader.stop()
        await follower.step()
        assert follower.is_leader and follower.epoch is not None and first_epoch is not None
        assert follower.epoch > first_epoch
    finally:
        await a_store.close()
        await b_store.close()


@pytest.mark.parametrize("backend", ["inproc", "process"])
async def test_local_node_runs_tasks_and_scales_instances(tmp_path: Path, backend: str) -> None:
    store = await SQLiteStore.open(tmp_path / "node.db")
    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1, backend=backend)
    await node.start()
    try:
        client = Client.in_process(node.hub)
        bundle = write_bundle(tmp_path / "b", "echo", config={"scale": {"min": 1, "max": 3}})
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        ids = [
            (
                await client.call(r.SubmitTask, SubmitTaskRequest(deployment="echo", input=f"n{i}"))
            ).task.id
            for i in range(20)
        ]
        for i, task_id in enumerate(ids):
            task = (await client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=30))).task
            assert (
                task.state == "succeeded"
                and task.outcome
                and task.outcome["summary"] == f"You said: n{i}"
            )
        await client.call(r.ScaleDeployment, ScaleDeploymentRequest(name="echo", replicas=3))
        # A process instance is a child interpreter: under a loaded machine its start takes seconds.
        for _ in range(1200):  # up to 60 s
            if len(node.manager.instances) == 3:
                break
            await asyncio.sleep(0.05)
        assert len(node.manager.instances) == 3
        assert await store.scalar("SELECT COUNT(*) FROM runs") == 20
    finally:
        await node.drain(5)
        await store.close()


async def test_one_shot_tick_schedules_only_its_task_tree_on_its_own_nest(tmp_path: Path) -> None:
    from agen.hub import leadership
    from agen.hub import queue as q
    from agen.hub.leader.scheduler import Scope, schedule_tick
    from agen.store import Tx
    from tests.unit.queue_helpers import add_deployment, add_nest, new_task

    store = await SQLiteStore.open(tmp_path / "scope.db")
    try:

        def seed(tx: Tx) -> dict[str, str]:
            ids = {
                name: add_deployment(tx, name, scale={"min": 0, "max": 2})
                for name in ("mine", "helper", "other")
            }
            ids["local"] = add_nest(
                tx, "local", heartbeat_ms=0
            )  # a dead agen up's Nest: silent for ages
            ids["own"] = add_nest(tx, "oneshot-1")
            root, _ = q.submit_task(tx, new_task(ids["mine"], name="mine"))
            q.submit_task(tx, new_task(ids["helper"], name="helper", parent_task_id=root.id))
            q.submit_task(tx, new_task(ids["other"], name="other"))
            q.submit_task(tx, new_task(ids["other"], name="other"))
            [held] = q.lease_tasks(
                tx,
                deployment_id=ids["other"],
                nest_id=ids["local"],
                instance_id=None,
                limit=1,
                lease_ms=1,
                now_ms=0,
            )  # a lease that ran out long ago
            tx.execute(
                "INSERT INTO assignments (deployment_id, nest_id, count, digest, leader_epoch, updated_ms)"
                " VALUES (?, ?, 1, 'd', 1, 0)",
                (ids["other"], ids["local"]),
            )
            ids["root"], ids["held"] = root.id, held.task.id
            return ids

        ids = await store.write(seed)
        scope = Scope(ids["mine"], ids["own"], ids["root"])
        name = f"oneshot:{ids['own']}"

        def tick(tx: Tx) -> None:
            epoch = leadership.acquire_or_renew(tx, name, "me", 10_000)
            assert epoch is not None
            schedule_tick(tx, leader_name=name, leader_epoch=epoch, now_ms=tx.now_ms, scope=scope)

        await store.write(tick)
        placed = {
            (r["deployment_id"], r["nest_id"]): r["count"]
            for r in await store.all("SELECT deployment_id, nest_id, count FROM assignments")
        }
        assert placed == {
            (ids["mine"], ids["own"]): 1,
            (ids["helper"], ids["own"]): 1,
            (ids["other"], ids["local"]): 1,
        }  # the other deployment's is untouched
        held = await store.one(
            "SELECT state, lease_nest_id FROM tasks WHERE id = ?", (ids["held"],)
        )
        assert held == {
            "state": "leased",
            "lease_nest_id": ids["local"],
        }  # its expired lease is agen up's to sweep
        assert await store.scalar("SELECT state FROM nests WHERE name = 'local'") == "active"
        assert await store.scalar("SELECT desired FROM deployments WHERE name = 'other'") == 0
    finally:
        await store.close()


async def test_scoped_local_node_retires_its_nest_and_lease_when_drained_keeping_instance_history(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "node.db")
    try:
        hub = Hub(store)
        client = Client.in_process(hub)
        for name in ("mine", "other"):
            bundle = write_bundle(tmp_path / name, name, config={"scale": {"min": 0, "max": 1}})
            await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        other = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="other", input="later"))
        ).task
        task = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="mine", input="now"))
        ).task
        node = LocalNode(
            store,
            hub=hub,
            tick_s=0.1,
            heartbeat_s=0.1,
            nest_name="oneshot-7",
            only_deployment=task.deployment_id,
            only_tree=task.id,
        )
        await node.start()
        try:
            done = (await client.call(r.GetTask, GetTaskRequest(id=task.id, wait_seconds=30))).task
            assert done.state == "succeeded"
        finally:
            await node.drain(5)
        assert (await client.call(r.GetTask, GetTaskRequest(id=other.id))).task.state == "queued"
        assert await store.all("SELECT name, state FROM nests") == [
            {"name": "oneshot-7", "state": "lost"}
        ]
        assert await store.all("SELECT name FROM leases") == []
        assert await store.all("SELECT nest_id FROM assignments") == []
        assert {i["state"] for i in await store.all("SELECT state FROM instances")} == {"stopped"}
    finally:
        await store.close()


async def test_a_node_whose_start_never_came_drains_without_an_error(tmp_path: Path) -> None:
    """`agen up` drains its node when start-up fails (a store it cannot write, a port taken): a Nest
    that never enrolled has nothing to report, and the drain must not replace the start-up's error."""
    store = await SQLiteStore.open(tmp_path / "agen.db")
    try:
        node = LocalNode(store)
        await node.drain(0)
        assert node.hub.draining
    finally:
        await store.close()
