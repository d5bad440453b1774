"""The Hub's leader loop and the local Nest, in-process over a real SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agen.api import registry as r
from agen.api.models.deployments import CreateDeploymentRequest, ScaleDeploymentRequest
from agen.api.models.tasks import GetTaskRequest, SubmitTaskRequest
from agen.client import Client
from agen.hub.leading import LeaderLoop
from agen.hub.service import Hub
from agen.node import LocalNode
from agen.store import SQLiteStore
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
        ids = [(await client.call(r.SubmitTask, SubmitTaskRequest(deployment="echo", input=f"n{i}"))).task.id
               for i in range(20)]
        for i, task_id in enumerate(ids):
            task = (await client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=30))).task
            assert task.state == "succeeded" and task.outcome and task.outcome["summary"] == f"You said: n{i}"
        await client.call(r.ScaleDeployment, ScaleDeploymentRequest(name="echo", replicas=3))
        for _ in range(100):
            if len(node.manager.instances) == 3:
                break
            await asyncio.sleep(0.05)
        assert len(node.manager.instances) == 3
        assert await store.scalar("SELECT COUNT(*) FROM runs") == 20
    finally:
        await node.drain(5)
        await store.close()
