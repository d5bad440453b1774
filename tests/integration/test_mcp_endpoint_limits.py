"""/mcp bounds what one token holds open, and names its tools as the RPCs are named (issue #30, item 8)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx

from agen.api.app import create_app
from agen.api.mcp_endpoint import MAX_STREAMS_PER_TOKEN, tool_name
from agen.hub.service import Hub
from tests.auth_helpers import api_token, served

MCP_GET = {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


@contextlib.asynccontextmanager
async def stream(h: httpx.AsyncClient, token: str) -> AsyncIterator[httpx.Response]:
    headers = {**MCP_GET, "Authorization": f"Bearer {token}"}
    async with h.stream("GET", "/mcp", headers=headers) as r:
        yield r


async def test_a_token_holds_a_bounded_number_of_open_mcp_streams(hub: Hub) -> None:
    alice, bob = await api_token(hub, ["viewer"]), await api_token(hub, ["viewer"])
    app = create_app(hub)
    try:
        async with served(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as h:
            async with contextlib.AsyncExitStack() as held:
                for _ in range(MAX_STREAMS_PER_TOKEN):
                    opened = await held.enter_async_context(stream(h, alice))
                    assert opened.status_code == 200
                one_more = await h.get(
                    "/mcp", headers={**MCP_GET, "Authorization": f"Bearer {alice}"}
                )
                assert one_more.status_code == 429
                error = one_more.json()["error"]
                assert error["code"] == "rate_limited"
                assert f"({MAX_STREAMS_PER_TOKEN}); close one first" in error["message"]
                async with stream(h, bob) as other:  # another token has its own bound
                    assert other.status_code == 200
            # the streams closed: alice may open one again (once the Hub has seen them go)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while True:
                async with stream(h, alice) as again:
                    if again.status_code == 200:
                        break
                assert loop.time() < deadline, "closed streams were never given back"
                await asyncio.sleep(0.05)
    finally:
        await app.state.mcp_endpoint.close()


def test_tool_names_keep_a_run_of_capitals_as_one_word() -> None:
    assert tool_name("SubmitTask") == "submit_task"
    assert tool_name("CountA2ACall") == "count_a2a_call"
    assert tool_name("WhoAmI") == "who_am_i"
    assert tool_name("GetTaskTree") == "get_task_tree"
