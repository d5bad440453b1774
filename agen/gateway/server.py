"""Serving the Gateway app with uvicorn beside the Hub's own server (``agen up``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator

import uvicorn

from agen.errors import ConflictError
from agen.gateway.app import GatewayConfig, create_gateway_app


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the process that runs the Gateway owns them."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class RunningGateway:
    def __init__(self, url: str, server: _Server, task: asyncio.Task[None]) -> None:
        self.url = url
        self._server = server
        self._task = task

    async def stop(self) -> None:
        self._server.should_exit = True
        with contextlib.suppress(Exception):
            await self._task


async def start_gateway(
    host: str, port: int, hub_url: str, *, ca_hash: str | None = None
) -> RunningGateway:
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    app = create_gateway_app(GatewayConfig(hub_url=hub_url, public_url=url, ca_hash=ca_hash))
    server = _Server(
        uvicorn.Config(
            app, host=host, port=port, log_level="warning", lifespan="off", access_log=False
        )
    )
    task = asyncio.create_task(server.serve(), name="a2a-gateway")
    while not server.started:
        if task.done():
            with contextlib.suppress(BaseException):
                await task
            raise ConflictError(
                f"--gateway-listen {host}:{port}: cannot listen there (in use?); pick another, "
                f"e.g. --gateway-listen {host}:{port + 10}",
                field="--gateway-listen",
            )
        await asyncio.sleep(0.02)
    return RunningGateway(url, server, task)
