"""Live events on the Hub's SSE door (/api/v1/events): run.delta and the model and tool call
events come without an id (never stored, so they never move a reconnecting client's cursor), only
to a follower whose type filter names them, within its namespaces and task; one that subscribes
mid-answer gets the model call so far first; the event log gets no rows for them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from agen.api import registry as rpc
from agen.api.app import create_app
from agen.client import Client
from agen.domain.live import LiveBus, LiveEvent
from agen.hub.service import Hub
from agen.store import SQLiteStore
from agen.testing.server import ThreadServer
from agen.wire.tokens import CreateTokenRequest


def live(type_: str, task: str, ns: str = "default", **data: Any) -> LiveEvent:
    return LiveEvent(type_, ns, "bot", f"run-{task}", task, {"turn": 1, **data}, 1)


async def read_frames(
    url: str, token: str, query: str, count: int, seen: asyncio.Queue[None] | None = None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    frame: dict[str, str] = {}
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(timeout=20) as c,
        c.stream("GET", f"{url}/api/v1/events?{query}", headers=headers) as resp,
    ):
        assert resp.status_code == 200, await resp.aread()
        async for line in resp.aiter_lines():
            if line:
                key, _, value = line.partition(":")
                frame[key] = value.lstrip(" ")
                continue
            if "data" in frame:
                out.append({**json.loads(frame["data"]), "sse_id": frame.get("id")})
                if seen is not None:
                    seen.put_nowait(None)
                if len(out) >= count:
                    return out
            frame = {}
    return out


async def test_live_events_reach_a_follower_that_asks_for_them_and_are_never_stored(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    hub = Hub(store)
    hub.live = LiveBus()
    token = (
        await Client.in_process(hub).call(rpc.CreateToken, CreateTokenRequest(scopes=["viewer"]))
    ).token
    # a model call already under way when the follower connects: it gets it from its start
    hub.live.publish(live("model.started", "t1", model="m", attempt=0))
    hub.live.publish(live("run.delta", "t1", text="Hel", kind="text"))
    async with ThreadServer(create_app(hub)) as srv:
        query = "namespace=default&task=t1&type=run.delta&type=model.&type=task.succeeded"

        async def publish_rest() -> None:
            hub.live.publish(live("run.delta", "t2", text="other task", kind="text"))
            hub.live.publish(live("run.delta", "t1", ns="other", text="other ns", kind="text"))
            hub.live.publish(live("tool.started", "t1", tool="x"))  # not a type asked for
            hub.live.publish(live("run.delta", "t1", text="lo", kind="text"))
            hub.live.publish(live("model.finished", "t1", status="ok"))
            await store.write(lambda tx: tx.event("default", "task.succeeded", task_id="t1"))

        seen: asyncio.Queue[None] = asyncio.Queue()
        reader = asyncio.create_task(read_frames(srv.url, token, query, 5, seen))
        for _ in range(2):  # the call so far reached the follower: it is subscribed
            await seen.get()
        await publish_rest()
        frames = await reader
    got = [(f["type"], f["data"].get("text"), f["sse_id"]) for f in frames]
    assert got[:4] == [
        ("model.started", None, None),
        ("run.delta", "Hel", None),
        ("run.delta", "lo", None),
        ("model.finished", None, None),
    ]
    assert got[4][0] == "task.succeeded" and got[4][2] is not None  # stored: it has its seq
    assert await store.scalar("SELECT COUNT(*) FROM events WHERE type LIKE 'run.delta'") == 0
    await store.close()


async def test_a_follower_without_a_live_type_gets_the_event_log_only(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    hub = Hub(store)
    hub.live = LiveBus()
    hub.live.publish(live("model.started", "t1", model="m", attempt=0))
    await store.write(lambda tx: tx.event("default", "task.queued", task_id="t1"))
    token = (
        await Client.in_process(hub).call(rpc.CreateToken, CreateTokenRequest(scopes=["viewer"]))
    ).token
    async with ThreadServer(create_app(hub)) as srv:
        frames = await read_frames(srv.url, token, "namespace=default", 1)
    assert [f["type"] for f in frames] == ["task.queued"]
    await store.close()
