"""Servers agen binds itself (the A2A Gateway, the test model server) turn Nagle's algorithm off on
every connection, as uvicorn does for a host and port it binds: without it each response written in
parts waited for the client's delayed ACK (~40 ms a request on the Gateway)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from agen.util.listen import tcp_listener


async def test_a_connection_accepted_on_agens_own_listener_has_nagle_off() -> None:
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    sock = tcp_listener("127.0.0.1", 0)
    server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
    try:
        port = sock.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(accepted, 30) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


def test_a_taken_address_is_an_oserror_and_leaves_no_socket_open() -> None:
    with tcp_listener("127.0.0.1", 0) as first:
        first.listen()
        port = first.getsockname()[1]
        with pytest.raises(OSError):
            tcp_listener("127.0.0.1", port)
