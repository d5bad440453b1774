"""A cancelled run ends in its trace like any other (LocalNode: Hub, leader, Nest, Runner, SQLite,
a real MCP tool server, an OTLP/HTTP receiver): its run span and the tool span it was in are closed
``cancelled``, `agen trace` draws them ended, and the exporter sends them."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from agen.api import registry as r
from agen.client import Client
from agen.node import LocalNode
from agen.otel.config import OtlpConfig
from agen.otel.exporter import start_export
from agen.render.observe import trace_tree
from agen.store import SQLiteStore
from agen.testing.server import ThreadServer
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.observe import GetTraceRequest
from agen.wire.tasks import CancelTaskRequest, SubmitTaskRequest
from tests.e2e.test_otel_export import Receiver, attr
from tests.fleet_helpers import files_b64, write_bundle

SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_test_server.py"


async def _until(check: Any, timeout_s: float = 30) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        value = await check()
        if value:
            return value
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def test_a_cancelled_run_closes_its_spans_cancelled_and_exports_them(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        "waiter",
        script=[
            {"toolCalls": [{"name": "t_wait_file", "arguments": {"path": str(tmp_path / "no")}}]},
            {"text": "never reached"},
        ],
        config={
            "kind": "pool",
            "permissions": {"default": "allow"},
            # an effect: the turn is stored and the call recorded started before it runs
            "tools": {"t": {"wait_file": {"sideEffect": True}}},
        },
    )
    (bundle / "mcp.json").write_text(
        json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": [str(SERVER)]}}})
    )
    rec = Receiver()
    store = await SQLiteStore.open(tmp_path / "hub.db")
    node = LocalNode(store, tick_s=0.05, heartbeat_s=0.05)
    with ThreadServer(rec.app()) as receiver:
        export = await start_export(store, OtlpConfig(endpoint=f"{receiver.url}/v1/traces"))
        assert export is not None
        await node.start()
        try:
            client = Client.in_process(node.hub)
            await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
            task = (
                await client.call(r.SubmitTask, SubmitTaskRequest(deployment="waiter", input="go"))
            ).task

            async def in_the_call() -> Any:
                return await store.scalar(
                    "SELECT 1 FROM effects e JOIN runs r ON r.id = e.run_id"
                    " WHERE r.task_id = ? AND e.state = 'started'",
                    (task.id,),
                )

            await _until(in_the_call)
            await client.call(r.CancelTask, CancelTaskRequest(id=task.id))

            async def tool_span() -> Any:
                return await store.one(
                    "SELECT status, ended_ms FROM spans WHERE task_id = ? AND name = 'agen.tool'",
                    (task.id,),
                )

            tool = await _until(tool_span)
            run = await store.one("SELECT id, trace_id FROM runs WHERE task_id = ?", (task.id,))
            assert run is not None
            spans = await store.all(
                "SELECT name, status, ended_ms FROM spans WHERE run_id = ? AND name = 'agen.run'",
                (run["id"],),
            )
            assert [(s["status"], s["ended_ms"] is not None) for s in spans] == [
                ("cancelled", True)
            ]
            assert tool["status"] == "cancelled" and tool["ended_ms"] is not None
            trace = await client.call(r.GetTrace, GetTraceRequest(id=run["trace_id"]))
            assert all(s.ended_ms is not None for s in trace.spans)  # drawn ended, not running
            drawn = Console(width=200, record=True)
            drawn.print(trace_tree(trace))
            assert "cancelled" in drawn.export_text()

            want = {("agen.run", "cancelled"), ("agen.tool", "cancelled")}

            async def exported() -> Any:
                # the run's spans and the tool span added after the Hub ended it (run.spans) come
                # in separate exports: wait for both, not for the first two spans
                got = {
                    (attr(x, "agen.span.name"), attr(x, "agen.status"))
                    for x in rec.of_task(task.id)
                }
                return got if want <= got else None

            got = await _until(exported)
            assert want <= got
        finally:
            await node.drain(5)
            await export.stop(5)
            await store.close()
