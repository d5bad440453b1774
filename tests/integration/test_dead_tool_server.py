"""A tool server that dies under an idle instance makes the instance unhealthy; the Manager replaces it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from agen.api import registry as r
from agen.client import Client
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle

SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_test_server.py"


async def until(check, timeout_s: float = 30):  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        value = check()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError("condition not met in time")


async def test_a_dead_mcp_server_gets_its_instance_replaced_with_a_fresh_server(
    tmp_path: Path,
) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        "toolbox",
        script=[
            {"toolCalls": [{"name": "t_pid", "arguments": {}}]},
            {"text": "done"},
        ],
        config={"kind": "pool", "scale": {"min": 1, "max": 1}, "permissions": {"allow": ["t.*"]}},
        sandbox={"enabled": False},  # the test kills the server by the pid it reports: the host's
    )
    (bundle / "mcp.json").write_text(
        json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": [str(SERVER)]}}})
    )
    store = await SQLiteStore.open(tmp_path / "hub.db")
    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1)
    await node.start()
    try:
        client = Client.in_process(node.hub)
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        task = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="toolbox", input="pid?"))
        ).task
        done = (await client.call(r.GetTask, GetTaskRequest(id=task.id, wait_seconds=60))).task
        assert done.state == "succeeded"
        first = await until(
            lambda: [i for i in node.manager.instances.values() if i.state == "ready"]
        )
        old_id = first[0].id
        rows = await store.all("SELECT name, content FROM messages WHERE role = 'tool'")
        assert len(rows) == 1, rows
        pid = int(rows[0]["content"])

        os.kill(pid, signal.SIGKILL)

        await until(
            lambda: (
                old_id not in node.manager.instances
                and [i for i in node.manager.instances.values() if i.state == "ready"]
            ),
            timeout_s=60,
        )
        logs: list[str] = []
        for _ in range(50):  # the failure reaches the deployment log with the Nest's next report
            logs = [
                row["message"] for row in await store.all("SELECT message FROM deployment_logs")
            ]
            if any("MCP server t is not running" in m for m in logs):
                break
            await asyncio.sleep(0.1)
        assert any("MCP server t is not running" in m for m in logs), logs
        # the replacement's own server answers: the next task runs on a fresh connection
        again = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="toolbox", input="again"))
        ).task
        assert (
            await client.call(r.GetTask, GetTaskRequest(id=again.id, wait_seconds=60))
        ).task.state == "succeeded"
    finally:
        await node.drain(0)
        await store.close()
