"""A run its instance stops (a drain that ran out of time) is given back to the queue and resumes
elsewhere: stopping it is not cancelling its task. Before, the stopped run wrote itself ended
``cancelled``, so the next lease found a finished run and the task ended cancelled, which nobody
asked for (seen under load in the two-Hub scale-out test, after a Hub kill)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.unit.nest_helpers import until

TEST_SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_test_server.py")


def gated_bundle(root: Path) -> Path:
    """One step that waits until the file ``gate`` exists (idempotent: a resumed run waits again),
    then done."""
    gate = {"gate": str(root / "gate"), "started": str(root / "started")}
    bundle = write_bundle(
        root / "gated",
        "gated",
        script=[{"toolCalls": [{"name": "t_wait_for_gate", "arguments": gate}]}, {"text": "done"}],
        config={"kind": "pool", "scale": {"min": 1, "max": 1}, "permissions": {"default": "allow"}},
    )
    server = {"command": sys.executable, "args": [TEST_SERVER]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"t": server}}))
    return bundle


@pytest.mark.parametrize("backend", ["inproc", "process"])
async def test_a_run_stopped_at_the_drain_deadline_resumes_and_its_task_succeeds(
    tmp_path: Path, backend: str
) -> None:
    store = await SQLiteStore.open(tmp_path / "node.db")
    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1, backend=backend)
    await node.start()
    try:
        client = Client.in_process(node.hub)
        await client.call(
            r.CreateDeployment, CreateDeploymentRequest(files=files_b64(gated_bundle(tmp_path)))
        )
        task = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="gated", input="go"))
        ).task
        started = tmp_path / "started"
        await until(lambda: started.exists(), "the run to wait at the gate", 60)
        first = next(iter(node.manager.instances.values()))
        # the deadline passes while the run waits in its tool call: the instance stops the run
        await first.drain(0.05)
        await until(
            lambda: (
                any(i is not first for i in node.manager.instances.values())
                and len(started.read_text().split()) == 2
            ),
            "a new instance to resume the run, back at the gate",
            60,
        )
        (tmp_path / "gate").touch()
        done = (await client.call(r.GetTask, GetTaskRequest(id=task.id, wait_seconds=60))).task
        assert done.state == "succeeded", done
        runs = await store.all("SELECT status, epoch FROM runs WHERE task_id = ?", (task.id,))
        assert [row["status"] for row in runs] == ["succeeded"]  # one run, resumed, not a second
        kinds = [
            row["type"]
            for row in await store.all(
                "SELECT type FROM events WHERE task_id = ? ORDER BY seq", (task.id,)
            )
        ]
        assert "run.resumed" in kinds and "task.cancelled" not in kinds
        assert kinds.count("task.released") == 1
    finally:
        await node.drain(10)
        await store.close()
