"""A Nest's own credential acts only for the tasks it runs: the delegation RPCs (agen.hub.rpc.children)
refuse a Nest that does not hold the lease of the task it names (seed 000 §10)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agen.api import registry as r
from agen.api.registry import Rpc
from agen.client import Client
from agen.errors import ConflictError, DeniedError
from agen.hub.service import Hub
from agen.store import now_ms
from agen.wire import delegation as m
from agen.wire.common import Model
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.nests import CreateJoinTokenRequest, EnrolNestRequest
from agen.wire.tasks import SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle


async def _enrolled(hub: Hub, admin: Client, name: str) -> tuple[str, Client]:
    join = await admin.call(r.CreateJoinToken, CreateJoinTokenRequest())
    joiner = Client.in_process(hub, await hub.auth.authenticate(join.token, now_ms()))
    resp = await joiner.call(r.EnrolNest, EnrolNestRequest(name=name))
    return resp.nest_id, Client.in_process(hub, await hub.auth.authenticate(resp.token, now_ms()))


async def test_a_nest_cannot_act_for_a_task_another_nest_runs(hub: Hub, tmp_path: Path) -> None:
    admin = Client.in_process(hub)
    bundle = write_bundle(tmp_path / "worker", "worker", config={"kind": "pool"})
    await admin.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
    task = (await admin.call(r.SubmitTask, SubmitTaskRequest(deployment="worker", input="x"))).task
    a_id, a = await _enrolled(hub, admin, "a")
    _, b = await _enrolled(hub, admin, "b")
    await hub.store.write(  # nest a leased the task (as LeaseTasks leaves it)
        lambda tx: tx.execute(
            "UPDATE tasks SET state = 'running', lease_id = 'L1', lease_nest_id = ? WHERE id = ?",
            (a_id, task.id),
        )
    )
    child = m.SubmitChildTaskRequest(
        parent_task_id=task.id, deployment="worker", input="c", call_key="k"
    )
    calls: list[tuple[Rpc[Any, Any], Model]] = [
        (r.SubmitChildTask, child),
        (r.CheckTurn, m.CheckTurnRequest(task_id=task.id)),
        (r.AcquireLock, m.AcquireLockRequest(task_id=task.id, name="repo")),
        (r.ReleaseLock, m.ReleaseLockRequest(task_id=task.id, name="repo")),
        (r.AckInbox, m.AckInboxRequest(task_id=task.id, inbox_ids=[])),
    ]
    for rpc, req in calls:
        with pytest.raises(DeniedError, match=f"task {task.id} is not running on nest"):
            await b.call(rpc, req)
    with pytest.raises(ConflictError, match="has no run yet"):  # past the lease check: a runs it
        await a.call(r.SubmitChildTask, child)
    for rpc, req in calls[1:]:
        await a.call(rpc, req)
    made = (await admin.call(r.SubmitTask, SubmitTaskRequest(deployment="worker", input="c"))).task
    await hub.store.write(
        lambda tx: tx.execute(
            "UPDATE tasks SET parent_task_id = ?, root_task_id = ? WHERE id = ?",
            (task.id, task.id, made.id),
        )
    )
    targeted: list[tuple[Rpc[Any, Any], Model]] = [
        (r.QueryChildTask, m.ChildTaskRef(task_id=task.id, target=made.id)),
        (
            r.SignalChildTask,
            m.SignalChildTaskRequest(task_id=task.id, target=made.id, message="hi"),
        ),
        (r.WaitChildTask, m.WaitChildTaskRequest(task_id=task.id, child_id=made.id)),
    ]
    for rpc, req in targeted:
        with pytest.raises(DeniedError, match="is not running on nest"):
            await b.call(rpc, req)
        await a.call(rpc, req)
    assert (
        await hub.store.scalar("SELECT COUNT(*) FROM tasks WHERE parent_task_id = ?", (task.id,))
        == 1
    )
