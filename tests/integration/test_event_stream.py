"""The event stream over real HTTP: SSE ids, Last-Event-ID resume across a Hub restart, ListEvents,
and the `agen events` / `agen notify` / `agen providers` commands against a running Hub."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from agen.api import registry as rpc
from agen.api.app import create_app
from agen.cli import app as cli_app
from agen.client import Client
from agen.hub.service import Hub
from agen.store import SQLiteStore
from agen.testing.server import ThreadServer
from agen.wire.signals import ListEventsRequest
from agen.wire.tokens import CreateTokenRequest


async def read_sse(
    url: str, token: str, *, count: int, last_id: int | None = None
) -> list[dict[str, Any]]:
    """Read ``count`` events from the stream (ids and payloads), then disconnect."""
    headers = {"Authorization": f"Bearer {token}"}
    if last_id is not None:
        headers["Last-Event-ID"] = str(last_id)
    out: list[dict[str, Any]] = []
    frame: dict[str, str] = {}
    async with (
        httpx.AsyncClient(timeout=20) as c,
        c.stream(
            "GET", url + "/api/v1/events?namespace=default&type=task.", headers=headers
        ) as resp,
    ):
        if resp.status_code != 200:
            raise AssertionError((await resp.aread()).decode())
        assert resp.headers["content-type"].startswith("text/event-stream")
        async for line in resp.aiter_lines():
            if not line:
                if "data" in frame:
                    out.append(
                        {
                            **json.loads(frame["data"]),
                            "sse_id": int(frame["id"]),
                            "sse_event": frame["event"],
                        }
                    )
                    if len(out) >= count:
                        return out
                frame = {}
                continue
            key, _, value = line.partition(":")
            frame[key] = value.lstrip(" ")
    return out


async def emit(store: SQLiteStore, *types: str) -> None:
    await store.write(lambda tx: [tx.event("default", t) for t in types])


async def test_sse_resumes_from_last_event_id_across_a_hub_restart(tmp_path: Path) -> None:
    path = tmp_path / "hub.db"
    store = await SQLiteStore.open(path)
    hub = Hub(store)
    token = (
        await Client.in_process(hub).call(rpc.CreateToken, CreateTokenRequest(scopes=["viewer"]))
    ).token
    await emit(store, "task.queued", "deployment.created", "task.started", "task.succeeded")
    async with ThreadServer(create_app(hub)) as srv:
        first = await read_sse(srv.url, token, count=2)
    await store.close()

    store = await SQLiteStore.open(path)  # a new Hub process on the same store
    hub = Hub(store)
    await emit(store, "task.queued", "approval.requested", "task.failed")
    async with ThreadServer(create_app(hub)) as srv:
        rest_task = asyncio.create_task(
            read_sse(srv.url, token, count=4, last_id=first[-1]["sse_id"])
        )
        await asyncio.sleep(0.3)
        await emit(store, "task.cancelled")  # arrives while the client is connected
        rest = await asyncio.wait_for(rest_task, 20)
    await store.close()

    types = [e["type"] for e in first + rest]
    assert types == [
        "task.queued",
        "task.started",
        "task.succeeded",
        "task.queued",
        "task.failed",
        "task.cancelled",
    ]
    ids = [e["sse_id"] for e in first + rest]
    assert ids == sorted(set(ids)) and all(
        e["sse_id"] == e["seq"] and e["sse_event"] == e["type"] for e in first + rest
    )


async def test_list_events_over_http_and_the_cli(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    hub = Hub(store)
    token = (
        await Client.in_process(hub).call(rpc.CreateToken, CreateTokenRequest(scopes=["admin"]))
    ).token
    await store.write(
        lambda tx: (
            tx.event("default", "task.queued", deployment="a", labels={"team": "x"}),
            tx.event(
                "default",
                "budget.threshold",
                deployment="a",
                severity="critical",
                data={"percent": 100},
            ),
        )
    )
    try:
        async with ThreadServer(create_app(hub)) as srv:
            async with Client.http(srv.url, token) as client:
                page = await client.call(
                    rpc.ListEvents, ListEventsRequest(namespace="default", severity="critical")
                )
                assert [e.type for e in page.events] == ["budget.threshold"]
                waited = await client.call(
                    rpc.ListEvents,
                    ListEventsRequest(namespace="default", after=page.cursor, wait_seconds=0.2),
                )
                assert waited.events == [] and waited.cursor == page.cursor

            def cli(*args: str) -> Any:
                result = CliRunner().invoke(cli_app, [*args, "--hub", srv.url, "--token", token])
                assert result.exit_code == 0, result.output
                return result.output

            out = await asyncio.to_thread(cli, "events", "--type", "task.", "--label", "team=x")
            assert "task.queued" in out and "budget.threshold" not in out
            await asyncio.to_thread(
                cli, "notify", "set", "ops", "http://127.0.0.1:9/hook", "--event", "budget."
            )
            listed = json.loads(await asyncio.to_thread(cli, "notify", "ls", "--json"))
            assert [t["name"] for t in listed["targets"]] == ["ops"] and listed["targets"][0][
                "events"
            ] == ["budget."]
            assert "removed" in await asyncio.to_thread(cli, "notify", "rm", "ops")
            holds = json.loads(await asyncio.to_thread(cli, "providers", "--json"))
            assert holds == {"holds": []}
    finally:
        await store.close()
