"""The Hub's MCP endpoint: the official MCP Python client lists and calls Hub tools at /mcp, filtered by scope."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.harness import Up

HELLO = Path(__file__).resolve().parents[2] / "bundles" / "hello"


async def _session(url: str, token: str, work: Any) -> Any:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with Client(streamable_http_client(f"{url}/mcp", http_client=http), cache=None) as c:
        return await work(c)


def _names(tools: Any) -> set[str]:
    return {t.name for t in tools.tools}


def test_a_viewer_token_reads_through_mcp_and_cannot_write(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    try:
        up.agen("deploy", str(HELLO))
        viewer = up.agen("token", "create", "--scope", "viewer", "--name", "ro").stdout.strip()

        async def work(c: Any) -> tuple[set[str], Any, Any]:
            tools = await c.list_tools()
            listed = await c.call_tool("list_deployments", {"namespace": "default"})
            submit = await c.call_tool("submit_task", {"deployment": "hello", "input": "hi"})
            return _names(tools), listed, submit

        names, listed, submit = asyncio.run(_session(up.url, viewer, work))
        assert {"list_deployments", "get_task", "list_tasks"} <= names
        assert (
            "submit_task" not in names and "shutdown" not in names
        )  # filtered by the token's scopes
        assert not listed.is_error
        assert [d["name"] for d in listed.structured_content["deployments"]] == ["hello"]
        assert submit.is_error
        assert "operator" in submit.content[0].text  # says which scope the call needs
        assert up.http("ListTasks", {}).json()["tasks"] == []  # nothing was queued
    finally:
        up.stop()


def test_an_operator_token_submits_a_task_through_mcp_and_waits_for_it(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    try:
        up.agen("deploy", str(HELLO))
        operator = up.agen("token", "create", "--scope", "operator", "--name", "op").stdout.strip()

        async def work(c: Any) -> Any:
            assert "submit_task" in _names(await c.list_tools())
            sub = await c.call_tool("submit_task", {"deployment": "hello", "input": "hi via mcp"})
            assert not sub.is_error, sub.content
            task_id = sub.structured_content["task"]["id"]
            return await c.call_tool("get_task", {"id": task_id, "wait_seconds": 60})

        done = asyncio.run(_session(up.url, operator, work))
        assert not done.is_error, done.content
        assert done.structured_content["task"]["state"] == "succeeded"
        assert done.structured_content["task"]["input"] == "hi via mcp"
    finally:
        up.stop()


def test_the_mcp_endpoint_refuses_a_caller_without_a_token(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    try:
        r = httpx.post(
            f"{up.url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "unauthenticated"
        assert r.headers["www-authenticate"] == "Bearer"
    finally:
        up.stop()
