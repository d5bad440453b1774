"""A Gateway whose listen address is taken is refused with a ConflictError (the Nest or agen up then
runs on without one), never a process exit from inside the web server."""

from __future__ import annotations

import httpx
import pytest

from agen.errors import ConflictError
from agen.gateway.server import start_gateway
from tests.ports import free_port


async def test_a_taken_gateway_address_is_a_conflict_and_the_first_gateway_keeps_serving() -> None:
    port = free_port()
    first = await start_gateway("127.0.0.1", port, "http://127.0.0.1:1")
    try:
        with pytest.raises(
            ConflictError, match=f"--gateway-listen 127.0.0.1:{port}: cannot listen"
        ):
            await start_gateway("127.0.0.1", port, "http://127.0.0.1:1")
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{first.url}/health")).json() == {"ok": True}
        assert first.waiting() == {}
    finally:
        await first.stop()
