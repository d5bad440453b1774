"""Saturation (seed 000 §5): an A2A call waiting at the Gateway while the deployment's only instance
is busy makes the Nest report it, and the autoscaler adds an instance (up to max), where the queue
alone (target_queue_per_instance 5) would not ask for one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from agen.api import registry as r
from agen.client import Client
from agen.gateway import GatewayConfig, create_gateway_app
from agen.gateway.wake import WaitingCalls, WakePolicy
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest, GetDeploymentRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.integration.test_a2a_gateway import _auth, _InProcessLink, _send, _token
from tests.unit.nest_helpers import Factory, until


async def test_a_call_waiting_on_a_busy_single_instance_adds_one_up_to_max(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "sat.db")
    factory = Factory()  # runs end when the test says so: the one instance stays busy
    node = LocalNode(store, executor_factory=factory, tick_s=0.05, heartbeat_s=0.05)
    await node.start()
    admin = Client.in_process(node.hub)
    waiting = WaitingCalls()
    node.manager.waiting_calls = waiting.snapshot
    app = create_gateway_app(
        GatewayConfig(
            hub_url="http://hub.invalid", public_url="http://gw.test", wake=WakePolicy(poll_s=0.02)
        ),
        link=_InProcessLink(node.hub),
        waiting=waiting,
    )
    try:
        scale = {"min": 1, "max": 2, "target_queue_per_instance": 5, "max_concurrency": 1}
        bundle = write_bundle(tmp_path / "b", "busy", config={"kind": "pool", "scale": scale})
        await admin.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))

        async def desired() -> int:
            dep = (await admin.call(r.GetDeployment, GetDeploymentRequest(name="busy"))).deployment
            assert dep is not None
            return dep.desired

        first = (
            await admin.call(r.SubmitTask, SubmitTaskRequest(deployment="busy", input="hold"))
        ).task
        await until(lambda: len(factory.executors) == 1 and factory.executors[0].started, "busy")
        assert await desired() == 1  # two tasks over a target of 5 per instance: one instance

        token = await _token(node, "operator")
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gw.test"
        ) as gw:
            call = asyncio.create_task(
                gw.post("/a2a/default/busy", json=_send("me too", "m1"), headers=_auth(token))
            )
            await until(lambda: waiting.snapshot() == {("default", "busy"): 1}, "the call waits")
            await until(lambda: len(factory.executors) == 2, "a second instance", timeout_s=30)
            assert await desired() == 2
            second = factory.executors[1]
            await until(lambda: bool(second.started), "the call's task on the new instance")
            second.finish(second.started[0])
            resp = await call
        assert resp.status_code == 200, resp.text
        assert resp.json()["result"]["status"]["state"] == "completed"
        assert waiting.snapshot() == {}

        # At max, a call waiting on full instances asks for no more.
        assert node.manager.saturated() == []
        # A report naming a deployment this Nest does not hold changes nothing (no error either:
        # it may have crossed an assignment change).
        await node.port.report(node.manager.nest_id, [], saturated=["01NOTADEPLOYMENT"])
        assert await desired() == 2
        factory.executors[0].finish(first.id)
        done = await admin.call(r.GetTask, GetTaskRequest(id=first.id, wait_seconds=10))
        assert done.task.state == "succeeded"
    finally:
        await node.drain(5)
        await store.close()
