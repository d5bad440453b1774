"""Closing an MCP connection never swallows the caller's own cancellation."""

from __future__ import annotations

import asyncio

import pytest

from agen.bundle.standard import StdioServer
from agen.runner.redact import Redactor
from agen.runner.secrets import ResolvedSecrets
from agen.runner.tools.mcp_conn import Live, ServerConn


async def test_cancelling_a_caller_while_it_closes_a_connection_cancels_it_and_the_connection() -> (
    None
):
    conn = ServerConn("slow", StdioServer(command="true"), ResolvedSecrets(), Redactor())
    owner_started = asyncio.Event()

    async def owner_that_never_closes() -> None:  # a session that ignores its stop event
        owner_started.set()
        await asyncio.Event().wait()

    owner = asyncio.create_task(owner_that_never_closes())
    await owner_started.wait()
    stop = asyncio.Event()
    conn._live = Live(client=None, generation=1, stderr=None, stop=stop, owner=owner)
    closing = asyncio.create_task(conn.close())
    await stop.wait()  # close() has asked the owner to stop and now waits for it
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    assert closing.cancelled()
    with pytest.raises(asyncio.CancelledError):
        await owner
