"""Serving the Gateway app with uvicorn: beside the Hub's own server (``agen up``), or in a Nest
(``agen nest run --gateway-listen``), where it reaches the Hub over the Nest's Hubs."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import uvicorn

from agen.errors import ConflictError
from agen.gateway.app import CardReader, GatewayConfig, create_gateway_app
from agen.gateway.auth import HubLink, KeyFetch, KeyRing
from agen.gateway.wake import WaitingCalls
from agen.util.listen import EmbeddedServer, tcp_listener


class RunningGateway:
    def __init__(
        self,
        url: str,
        server: EmbeddedServer,
        task: asyncio.Task[None],
        waiting: WaitingCalls,
        keys: asyncio.Task[None],
    ) -> None:
        self.url = url
        self._server = server
        self._task = task
        self._waiting = waiting
        self._keys = keys

    def waiting(self) -> dict[tuple[str, str], int]:
        """Calls waiting for a free instance now, by (namespace, deployment)."""
        return self._waiting.snapshot()

    async def stop(self) -> None:
        self._keys.cancel()
        self._server.should_exit = True
        with contextlib.suppress(Exception):
            await self._task
        with contextlib.suppress(asyncio.CancelledError):
            await self._keys


async def start_gateway(
    host: str,
    port: int,
    hub_url: str,
    *,
    ca_hash: str | None = None,
    link: HubLink | None = None,
    public_url: str | None = None,
    token_keys: KeyFetch | None = None,
    keys_file: Path | None = None,
    anonymous_card: CardReader | None = None,
) -> RunningGateway:
    """Serve on ``host:port``; ``link`` reaches the Hub (default: ``hub_url`` over HTTP),
    ``public_url`` is the address callers use (default: the listen address), ``token_keys`` fetches
    the Hub's call-token keys (None: call tokens are refused, API tokens still work), every minute
    while the Gateway runs, and ``keys_file`` keeps them on disk (a Nest's data dir)."""
    refused = ConflictError(
        f"--gateway-listen {host}:{port}: cannot listen there (in use?); pick another, "
        f"e.g. --gateway-listen {host}:{port + 10}",
        field="--gateway-listen",
    )
    # Bound here, not by uvicorn: on a taken address uvicorn calls sys.exit, which no task contains
    # and which ended the whole process (a Nest, agen up) instead of leaving it without a Gateway.
    try:
        sock = tcp_listener(host, port)
    except OSError:
        raise refused from None
    port = sock.getsockname()[1]  # port 0: the one the kernel picked
    url = public_url or f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    waiting = WaitingCalls()
    keys = KeyRing(token_keys, saved=keys_file)
    app = create_gateway_app(
        GatewayConfig(
            hub_url=hub_url,
            public_url=url,
            ca_hash=ca_hash,
            token_keys=token_keys,
            anonymous_card=anonymous_card,
        ),
        link,
        waiting,
        keys,
    )
    server = EmbeddedServer(
        uvicorn.Config(
            app, host=host, port=port, log_level="warning", lifespan="off", access_log=False
        )
    )
    task = asyncio.create_task(server.serve(sockets=[sock]), name="a2a-gateway")
    while not server.started:
        if task.done():
            with contextlib.suppress(BaseException):
                await task
            sock.close()
            raise refused
        await asyncio.sleep(0.02)
    fresh = asyncio.create_task(keys.keep_fresh(), name="a2a-gateway-keys")
    return RunningGateway(url.rstrip("/"), server, task, waiting, fresh)
