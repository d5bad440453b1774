"""Notification delivery to a real local HTTP receiver that fails and recovers."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agen.hub.events import notify
from agen.store import SQLiteStore
from agen.testing.server import ThreadServer

# SQLite only: notification delivery is engine-agnostic code; the Store port runs on both engines in tests/unit/test_store.py.
pytestmark = pytest.mark.sqlite_only

T0 = 1_735_732_800_000


class Receiver:
    """Answers 500 while ``failing``; records what it accepted (and every attempt)."""

    def __init__(self) -> None:
        self.failing = True
        self.accepted: list[tuple[dict[str, Any], str | None]] = []
        self.attempts = 0

    async def hook(self, request: Request) -> JSONResponse:
        self.attempts += 1
        body = await request.body()
        if self.failing:
            return JSONResponse({"error": "down"}, 500)
        sig = request.headers.get("x-agen-signature")
        expected = "sha256=" + hmac.new(b"hook-key", body, hashlib.sha256).hexdigest()
        self.accepted.append((json.loads(body), "ok" if sig == expected else sig))
        return JSONResponse({"ok": True})


def secrets(namespace: str, name: str) -> str | None:
    return "hook-key" if (namespace, name) == ("default", "HOOK_KEY") else None


async def test_a_failing_target_pauses_with_back_off_then_delivers_in_seq_order_signed(
    store: SQLiteStore,
) -> None:
    rx = Receiver()
    app = Starlette(routes=[Route("/hook", rx.hook, methods=["POST"])])
    async with ThreadServer(app) as srv, httpx.AsyncClient() as client:
        await store.write(
            lambda tx: tx.event("default", "task.queued", task_id="before")
        )  # not delivered
        await store.write(
            lambda tx: notify.set_target(
                tx, "default", "ops", srv.url + "/hook", events=["task."], secret="HOOK_KEY"
            )
        )
        await store.write(
            lambda tx: (
                tx.event("default", "task.queued", task_id="t1"),
                tx.event("default", "deployment.created", deployment="x"),
                tx.event("other", "task.queued", task_id="elsewhere"),
                tx.event("default", "task.succeeded", task_id="t1"),
            )
        )

        report = await notify.deliver_all(store, client, now_ms=T0, secrets=secrets)
        assert report.failed == 1 and report.delivered == 0 and "HTTP 500" in report.errors["ops"]
        row = await store.one("SELECT * FROM notify_targets WHERE name = 'ops'")
        assert (
            row is not None
            and row["paused_until_ms"] == T0 + 1000
            and "HTTP 500" in row["last_error"]
        )

        await notify.deliver_all(store, client, now_ms=T0 + 500, secrets=secrets)  # still paused
        assert rx.attempts == 1
        await notify.deliver_all(
            store, client, now_ms=T0 + 1000, secrets=secrets
        )  # fails again: 2 s
        row = await store.one("SELECT * FROM notify_targets WHERE name = 'ops'")
        assert row is not None and row["backoff_ms"] == 2000

        rx.failing = False
        report = await notify.deliver_all(store, client, now_ms=T0 + 3000, secrets=secrets)
        assert report.delivered == 2
        assert [(b["type"], b["task_id"], sig) for b, sig in rx.accepted] == [
            ("task.queued", "t1", "ok"),
            ("task.succeeded", "t1", "ok"),
        ]
        row = await store.one("SELECT * FROM notify_targets WHERE name = 'ops'")
        assert row is not None and row["last_error"] is None and row["paused_until_ms"] is None
        assert row["delivered"] == 2

        # Nothing new: nothing re-sent.
        await notify.deliver_all(store, client, now_ms=T0 + 4000, secrets=secrets)
        assert len(rx.accepted) == 2


async def test_back_off_grows_to_five_minutes_and_an_event_failing_for_an_hour_is_dropped(
    store: SQLiteStore,
) -> None:
    rx = Receiver()
    app = Starlette(routes=[Route("/hook", rx.hook, methods=["POST"])])
    async with ThreadServer(app) as srv, httpx.AsyncClient() as client:
        await store.write(lambda tx: notify.set_target(tx, "default", "ops", srv.url + "/hook"))
        await store.write(lambda tx: (tx.event("default", "a.one"), tx.event("default", "a.two")))
        now = T0
        backoffs: list[int] = []
        while True:
            report = await notify.deliver_all(store, client, now_ms=now, secrets=secrets)
            row = await store.one("SELECT * FROM notify_targets WHERE name = 'ops'")
            assert row is not None
            backoffs.append(row["backoff_ms"])
            if report.dropped:
                break
            now = row["paused_until_ms"]
        assert max(backoffs) == 5 * 60_000 and backoffs[:3] == [1000, 2000, 4000]
        assert row["dropped"] == 1 and "dropped event" in row["last_error"]
        assert now - T0 >= 3_600_000
        rx.failing = False
        await notify.deliver_all(store, client, now_ms=row["paused_until_ms"], secrets=secrets)
        assert [b["type"] for b, _ in rx.accepted] == ["a.two"]


async def test_targets_are_listed_replaced_and_removed(store: SQLiteStore) -> None:
    await store.write(
        lambda tx: notify.set_target(
            tx, "default", "ops", "http://127.0.0.1:1/x", severity="warning"
        )
    )
    await store.write(
        lambda tx: notify.set_target(
            tx, "default", "ops", "http://127.0.0.1:1/y", labels={"a": "b"}
        )
    )
    rows = await store.rows(notify.NotifyTargetRow, "SELECT * FROM notify_targets")
    assert (
        len(rows) == 1
        and notify.target_view(rows[0])["labels"] == {"a": "b"}
        and rows[0].url.endswith("/y")
    )
    await store.write(lambda tx: notify.delete_target(tx, "default", "ops"))
    from agen.errors import InvalidError, NotFoundError

    with pytest.raises(NotFoundError):
        await store.write(lambda tx: notify.delete_target(tx, "default", "ops"))
    with pytest.raises(InvalidError):
        await store.write(lambda tx: notify.set_target(tx, "default", "x", "ftp://nope"))
