"""Callers of every kind for authorization tests, made the way users make them (CreateToken, a join
token and EnrolNest, ResolveAgent), and raw HTTP against a Hub's app, so a test sends exactly the
headers a client would."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from agen.api import registry as r
from agen.api.app import create_app
from agen.client import Client
from agen.hub.service import Hub
from agen.wire.agents import ResolveAgentRequest
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tokens import CreateTokenRequest
from tests.fleet_helpers import files_b64, write_bundle


async def api_token(hub: Hub, scopes: list[str], **kw: Any) -> str:
    """A token the local admin creates (`agen token create`)."""
    made = await Client.in_process(hub).call(r.CreateToken, CreateTokenRequest(scopes=scopes, **kw))
    return made.token


async def deploy(hub: Hub, root: Path, name: str, namespace: str = "default") -> None:
    bundle = write_bundle(root / f"{namespace}-{name}", name, config={"kind": "pool"})
    await Client.in_process(hub).call(
        r.CreateDeployment, CreateDeploymentRequest(namespace=namespace, files=files_b64(bundle))
    )


async def running_task(
    hub: Hub, token: str, deployment: str, nest_id: str, namespace: str = "default"
) -> str:
    """A task submitted with ``token`` over HTTP and leased by ``nest_id`` (as LeaseTasks leaves it)."""
    body = {"namespace": namespace, "deployment": deployment, "input": "work"}
    resp = await post(hub, "SubmitTask", body, token)
    assert resp.status_code == 200, resp.text
    task_id = str(resp.json()["task"]["id"])
    await hub.store.write(
        lambda tx: tx.execute(
            "UPDATE tasks SET state = 'running', lease_id = 'L1', lease_nest_id = ? WHERE id = ?",
            (nest_id, task_id),
        )
    )
    return task_id


async def call_token(hub: Hub, deployment: str) -> str:
    """An operator's call token for one deployment (ResolveAgent, as `agen agents resolve` gets it)."""
    resolved = await Client.in_process(hub).call(
        r.ResolveAgent, ResolveAgentRequest(deployment=deployment)
    )
    assert resolved.call_token is not None
    return resolved.call_token


async def post(
    hub: Hub,
    method: str,
    body: dict[str, Any] | bytes,
    token: str,
    task: str | None = None,
    app: Any = None,
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    if task is not None:
        headers["X-Agen-Task"] = task
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app or create_app(hub)), base_url="http://hub.test"
    ) as h:
        return await h.post(f"/v1/{method}", content=content, headers=headers)


@contextlib.asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    """``app`` on a free loopback port (uvicorn in this loop): yields its URL. For what needs a real
    connection, such as a stream held open."""
    import uvicorn

    from agen.util.listen import tcp_listener

    sock = tcp_listener("127.0.0.1", 0)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    )
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await serving
        sock.close()
