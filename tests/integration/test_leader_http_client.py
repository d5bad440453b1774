"""The leader builds its notification HTTP client only when a target exists, and then only once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agen.hub.events import notify
from agen.hub.leader.loop import LeaderLoop
from agen.hub.service import Hub
from agen.store import SQLiteStore, Tx
from agen.testing.server import ThreadServer


class CountedClient(httpx.AsyncClient):
    built = 0

    def __init__(self, **kwargs: Any) -> None:
        type(self).built += 1
        super().__init__(**kwargs)


async def test_leader_ticks_build_no_http_client_until_a_target_exists_then_reuse_one(
    tmp_path: Path,
) -> None:
    received: list[bytes] = []

    async def hook(request: Request) -> JSONResponse:
        received.append(await request.body())
        return JSONResponse({"ok": True})

    store = await SQLiteStore.open(tmp_path / "agen.db")
    loop = LeaderLoop(Hub(store), http_factory=CountedClient)
    try:
        async with ThreadServer(Starlette(routes=[Route("/hook", hook, methods=["POST"])])) as srv:
            for _ in range(3):
                await loop.step()
            assert (
                loop.is_leader and CountedClient.built == 0
            )  # nothing to deliver: no client, no TLS setup

            await store.write(
                lambda tx: notify.set_target(
                    tx, "default", "ops", srv.url + "/hook", events=["task."]
                )
            )
            for i in range(3):

                def queued(tx: Tx, task_id: str = f"t{i}") -> None:
                    tx.event("default", "task.queued", task_id=task_id)

                await store.write(queued)
                await loop.step()
            assert len(received) == 3 and CountedClient.built == 1
    finally:
        await loop.stop()
        await store.close()
