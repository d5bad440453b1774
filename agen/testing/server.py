"""Serve an ASGI app on 127.0.0.1 (a free port) in a background thread: real HTTP for tests and benches."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

import uvicorn

from agen.util.listen import tcp_listener


class Served:
    """A server that starts and stops, as a sync or async context manager (from async code, start
    and stop run in a thread: they wait for the server)."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)


class ThreadServer(Served):
    """uvicorn on a loopback socket it binds itself (port 0), in a daemon thread."""

    def __init__(self, app: Any, *, name: str = "agen-test-http-server", **config: Any) -> None:
        self.app = app
        self.name = name
        self.config = config  # extra uvicorn.Config settings (timeout_keep_alive, backlog, ...)
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        sock = tcp_listener("127.0.0.1", 0)
        self._sock, self.port = sock, sock.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(
                self.app, log_level="error", lifespan="off", access_log=False, **self.config
            )
        )
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=self.name
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"{self.name} did not start on 127.0.0.1")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._sock is not None:
            self._sock.close()
