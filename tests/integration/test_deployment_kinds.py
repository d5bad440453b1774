"""Deployment kinds as seed 000 §4 specifies them, run by the Hub and the local Nest in process.

singleton: one identity with its own session (its one conversation, whatever key a task carries);
task: one instance per task, each instance runs exactly one task and then stops.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from agen.api import registry as r
from agen.client import Client
from agen.node import LocalNode
from agen.store import SQLiteStore, loads
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle


async def _run_all(
    tmp_path: Path,
    config: dict[str, object],
    tasks: list[SubmitTaskRequest],
    then: Callable[[SQLiteStore, list[str]], Awaitable[None]] | None = None,
) -> tuple[SQLiteStore, list[str]]:
    store = await SQLiteStore.open(tmp_path / "node.db")
    node = LocalNode(store, tick_s=0.05, heartbeat_s=0.05)
    await node.start()
    try:
        client = Client.in_process(node.hub)
        bundle = write_bundle(tmp_path / "b", "k", config=config)
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        ids = [(await client.call(r.SubmitTask, t)).task.id for t in tasks]
        for task_id in ids:
            task = (await client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=30))).task
            assert task.state == "succeeded", task
        if then is not None:
            await then(store, ids)
    finally:
        await node.drain(5)
    return store, ids


async def test_singleton_keeps_one_conversation_whatever_keys_its_tasks_carry(
    tmp_path: Path,
) -> None:
    tasks = [
        SubmitTaskRequest(deployment="k", input="one", conversation_key="a"),
        SubmitTaskRequest(deployment="k", input="two", conversation_key="b"),
        SubmitTaskRequest(deployment="k", input="three"),
    ]
    store, _ = await _run_all(tmp_path, {"kind": "singleton", "scale": {"min": 1, "max": 1}}, tasks)
    try:
        conversations = await store.all("SELECT DISTINCT conversation_id, session_id FROM runs")
        assert len(conversations) == 1
        # the third run saw the first two exchanges: it continued the one conversation
        seen = await store.scalar("SELECT COUNT(*) FROM messages WHERE role = 'user'")
        assert seen == 3
    finally:
        await store.close()


async def test_task_deployment_runs_each_task_on_its_own_instance_which_then_stops(
    tmp_path: Path,
) -> None:
    instance_of: dict[str, str] = {}

    async def instances_stopped(store: SQLiteStore, ids: list[str]) -> None:
        started = await store.all("SELECT task_id, data FROM events WHERE type = 'task.started'")
        instance_of.update({e["task_id"]: loads(e["data"], {})["instance_id"] for e in started})
        marks = ",".join("?" * len(instance_of))
        deadline = time.monotonic() + 30
        while (
            time.monotonic() < deadline
        ):  # each instance reports itself stopped after its one task
            ended = await store.all(
                f"SELECT exit_reason FROM instances WHERE state = 'stopped' AND id IN ({marks})",
                list(instance_of.values()),
            )
            if len(ended) == len(instance_of):
                break
            await asyncio.sleep(0.05)
        assert {e["exit_reason"] for e in ended} == {"ran its one task"}
        assert len(ended) == len(instance_of)

    tasks = [SubmitTaskRequest(deployment="k", input=f"n{i}") for i in range(3)]
    store, ids = await _run_all(
        tmp_path, {"kind": "task", "scale": {"min": 0, "max": 3}}, tasks, then=instances_stopped
    )
    try:
        assert sorted(instance_of) == sorted(ids)
        assert len(set(instance_of.values())) == 3
    finally:
        await store.close()
