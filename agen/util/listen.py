"""How agen serves HTTP with uvicorn inside a process of its own: a TCP listening socket bound by agen
itself, for uvicorn's ``serve(sockets=[...])``, and a uvicorn server that leaves the signals to that
process.

agen binds a server's socket itself where a taken address must be an error it can report (uvicorn
calls ``sys.exit`` on one) or where the port is picked by the kernel. Such a socket must say it is
TCP (``IPPROTO_TCP``, not the default 0): asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only on
connections whose socket says so, and with Nagle on, a response written in two parts waits for the
peer's delayed ACK, ~40 ms on Linux, on every request (the A2A round trip went from 15 to 59 ms).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Generator

import uvicorn


def tcp_listener(host: str, port: int) -> socket.socket:
    """A bound (not yet listening) TCP socket on ``host:port``; OSError when it cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


class EmbeddedServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the process that serves (``agen up``, a Nest's Gateway)
    owns SIGINT and SIGTERM and stops its servers itself (drain first, seed 001)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield
