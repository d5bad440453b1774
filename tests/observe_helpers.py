"""A real embedded Hub + local Nest (the ``agen run`` embedded path) with fake-model bundles."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agen.api import registry as r
from agen.client import Client
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest, Task
from tests.fleet_helpers import files_b64, write_bundle

TEST_SERVER = str(Path(__file__).parent / "fixtures" / "mcp_test_server.py")

# Three turns, three built-in tools, then an answer: a multi-tool run with usage per turn.
MULTI_TOOL_SCRIPT: list[dict[str, Any]] = [
    {
        "text": "Starting: I will note progress and save the findings.",
        "toolCalls": [
            {"name": "report_progress", "arguments": {"note": "reading the input", "percent": 30}}
        ],
        "usage": {"inputTokens": 120, "outputTokens": 24, "costUsd": 0.0012},
    },
    {
        "toolCalls": [
            {
                "name": "save_artifact",
                "arguments": {"name": "findings.md", "content": "# Findings\n- ok\n"},
            },
            {"name": "report_progress", "arguments": {"note": "saved findings", "percent": 80}},
        ],
        "usage": {"inputTokens": 180, "outputTokens": 40, "costUsd": 0.0019},
    },
    {
        "text": "Done: the findings are saved as findings.md.",
        "usage": {"inputTokens": 240, "outputTokens": 16, "costUsd": 0.0021},
    },
]


@dataclass
class Embedded:
    node: LocalNode
    client: Client
    root: Path

    async def deploy(
        self,
        name: str,
        *,
        script: list[dict[str, Any]] | None = None,
        config: dict[str, Any] | None = None,
        mcp: dict[str, Any] | None = None,
        namespace: str = "default",
    ) -> None:
        bundle = write_bundle(
            self.root / namespace / name,
            name,
            script=script,
            config=config
            or {
                "kind": "pool",
                "scale": {"min": 1, "max": 2},
                "permissions": {"allow": ["report_progress"]},  # the scripts report progress
            },
        )
        if mcp is not None:
            (bundle / "mcp.json").write_text(json.dumps({"mcpServers": mcp}))
        await self.client.call(
            r.CreateDeployment,
            CreateDeploymentRequest(namespace=namespace, files=files_b64(bundle)),
        )

    async def deploy_gated(self, name: str = "gated", *, text: str = "ship it") -> None:
        """One MCP tool call (t.echo with ``text``) that needs an approval, then an answer."""
        script: list[dict[str, Any]] = [
            {"toolCalls": [{"name": "t_echo", "arguments": {"text": text}}]},
            {"text": "shipped"},
        ]
        config = {
            "kind": "pool",
            "scale": {"min": 1, "max": 1},
            "permissions": {"ask": ["t.echo"], "default": "allow"},
        }
        await self.deploy(
            name,
            script=script,
            config=config,
            mcp={"t": {"command": sys.executable, "args": [TEST_SERVER]}},
        )

    async def deploy_unreachable(self, name: str = "unreachable") -> None:
        """A deployment whose model cannot be reached (nothing listens on port 9): every task fails.
        The caller sets OPENAI_API_KEY (any value)."""
        bundle = write_bundle(self.root / "default" / name, name)
        harness = {
            "provider": "openai",
            "model": "m1",
            "baseUrl": "http://127.0.0.1:9/v1",
            "maxRetries": 0,
        }
        (bundle / "x-agen" / "harness.json").write_text(json.dumps(harness))
        await self.client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))

    async def submit(self, deployment: str, text: str, **kw: Any) -> Task:
        resp = await self.client.call(
            r.SubmitTask, SubmitTaskRequest(deployment=deployment, input=text, **kw)
        )
        return resp.task

    async def wait(self, task_id: str, seconds: float = 60) -> Task:
        return (
            await self.client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=seconds))
        ).task

    async def run(self, deployment: str, text: str, **kw: Any) -> Task:
        task = await self.submit(deployment, text, **kw)
        return await self.wait(task.id)


@asynccontextmanager
async def embedded_hub(root: Path) -> AsyncIterator[Embedded]:
    store = await SQLiteStore.open(root / "hub.db")
    node = LocalNode(store, tick_s=0.2, heartbeat_s=0.2)
    await node.start()
    try:
        yield Embedded(node, Client.in_process(node.hub), root)
    finally:
        await node.drain(0)
        await store.close()


@asynccontextmanager
async def http_hub(e: Embedded) -> AsyncIterator[tuple[str, str]]:
    """Serve the embedded Hub's API on a free loopback port; yields (url, admin token)."""
    import asyncio
    import contextlib

    import uvicorn

    from agen.api.app import create_app
    from agen.util.listen import tcp_listener
    from agen.wire.tokens import CreateTokenRequest

    token = (await e.client.call(r.CreateToken, CreateTokenRequest(scopes=["admin"]))).token
    sock = tcp_listener("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(e.node.hub), log_level="warning", lifespan="off", access_log=False
        )
    )
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
        await asyncio.sleep(0.01)
    try:
        yield url, token
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await serving
        sock.close()
