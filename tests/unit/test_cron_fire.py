"""Cron firing in the Store with an injected clock: missed windows, catch-up, overlap, racing leaders."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from agen.bundle.config import Config
from agen.domain import DeploymentRow
from agen.errors import FencedError
from agen.hub.leadership import HUB_LEADER, acquire_or_renew
from agen.hub.triggers.tick import fire_due_triggers, sync_triggers
from agen.store import Row, Store
from tests.unit.trigger_helpers import deployment


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


async def setup(
    store: Store, trigger: dict[str, Any], active_since: int
) -> tuple[DeploymentRow, int]:
    dep = await deployment(store, "nightly")
    config = Config.model_validate({"triggers": [trigger]})
    await store.write(lambda tx: sync_triggers(tx, dep, config))
    await store.write(
        lambda tx: tx.execute(
            "UPDATE triggers SET active_since_ms = ?, next_due_ms = NULL", (active_since,)
        )
    )
    epoch = await store.write(lambda tx: acquire_or_renew(tx, HUB_LEADER, "hub-a", 3_600_000))
    assert epoch is not None
    return dep, epoch


async def events(store: Store) -> list[tuple[str, str, str | None]]:
    rows = await store.all("SELECT status, due_ms, reason FROM trigger_events ORDER BY due_ms")
    return [
        (
            r["status"],
            datetime.fromtimestamp(r["due_ms"] / 1000, tz=UTC).strftime("%H:%M"),
            r["reason"],
        )
        for r in rows
    ]


async def tasks(store: Store) -> list[Row]:
    return await store.all(
        "SELECT id, source, idempotency_key, state, input, submitted_by FROM tasks ORDER BY seq"
    )


async def test_a_hub_down_across_three_windows_records_them_missed_and_catch_up_fires_exactly_one(
    store: Store,
) -> None:
    trig = {
        "name": "report",
        "type": "cron",
        "schedule": "@hourly",
        "catchUp": True,
        "input": "write the report",
    }
    _, epoch = await setup(store, trig, ms("2025-01-01T09:30"))
    report = await store.write(
        lambda tx: fire_due_triggers(tx, leader_epoch=epoch, now_ms=ms("2025-01-01T10:00:20"))
    )
    assert len(report.fired) == 1
    # The Hub is down from 10:01 to 13:30: 11:00, 12:00 and 13:00 pass unevaluated.
    report = await store.write(
        lambda tx: fire_due_triggers(tx, leader_epoch=epoch, now_ms=ms("2025-01-01T13:30"))
    )
    assert report.missed == 2 and len(report.fired) == 1
    assert await events(store) == [
        ("fired", "10:00", None),
        ("missed", "11:00", "the Hub did not evaluate it in time"),
        ("missed", "12:00", "the Hub did not evaluate it in time"),
        ("fired", "13:00", "catch_up"),
    ]
    for _ in range(3):  # re-evaluating changes nothing
        await store.write(
            lambda tx: fire_due_triggers(tx, leader_epoch=epoch, now_ms=ms("2025-01-01T13:31"))
        )
    rows = await tasks(store)
    assert [r["idempotency_key"] for r in rows] == [
        f"cron:report:{ms('2025-01-01T10:00')}",
        f"cron:report:{ms('2025-01-01T13:00')}",
    ]
    assert all(r["source"] == "cron:report" and r["input"] == "write the report" for r in rows)
    assert all(
        r["submitted_by"] == "trigger:nightly/report" for r in rows
    )  # who approvals are requested by
    missed = await store.all("SELECT data FROM events WHERE type = 'trigger.missed'")
    assert len(missed) == 1
    row = await store.one("SELECT last_due_ms, next_due_ms FROM triggers")
    assert row == {"last_due_ms": ms("2025-01-01T13:00"), "next_due_ms": ms("2025-01-01T14:00")}


async def test_without_catch_up_every_late_window_is_missed_and_nothing_fires(store: Store) -> None:
    _, epoch = await setup(
        store, {"name": "r", "type": "cron", "schedule": "@hourly"}, ms("2025-01-01T09:30")
    )
    await store.write(
        lambda tx: fire_due_triggers(tx, leader_epoch=epoch, now_ms=ms("2025-01-01T12:30"))
    )
    assert [e[0] for e in await events(store)] == ["missed", "missed", "missed"]
    assert await tasks(store) == []


async def test_catch_up_window_limits_how_old_a_caught_up_window_may_be(store: Store) -> None:
    trig = {
        "name": "r",
        "type": "cron",
        "schedule": "@hourly",
        "catchUp": True,
        "catchUpWindow": "15m",
    }
    _, epoch = await setup(store, trig, ms("2025-01-01T09:30"))
    await store.write(
        lambda tx: fire_due_triggers(tx, leader_epoch=epoch, now_ms=ms("2025-01-01T12:30"))
    )
    assert [e[0] for e in await events(store)] == ["missed", "missed", "missed"]


async def test_overlap_skip_records_a_skipped_window_while_the_previous_task_is_unfinished(
    store: Store,
) -> None:
    trig = {"name": "sync", "type": "cron", "schedule": "*/5 * * * *", "overlap": "skip"}
    _, epoch = await setup(store, trig, ms("2025-01-01T10:00:30"))
    tick = ms("2025-01-01T10:05")
    for n in range(3):
        now = tick + n * 300_000
        await store.write(lambda tx, now=now: fire_due_triggers(tx, leader_epoch=epoch, now_ms=now))  # type: ignore[misc]
        if n == 1:
            await store.write(lambda tx: tx.execute("UPDATE tasks SET state = 'succeeded'"))
    statuses = await events(store)
    assert [(s, d) for s, d, _ in statuses] == [
        ("fired", "10:05"),
        ("skipped", "10:10"),
        ("fired", "10:15"),
    ]
    assert "overlap" in str(statuses[1][2])
    assert len(await tasks(store)) == 2


async def test_min_start_spacing_skips_a_window_too_soon_after_the_last_firing(
    store: Store,
) -> None:
    trig = {"name": "s", "type": "cron", "schedule": "@every 1m", "minStartSpacing": "150s"}
    _, epoch = await setup(store, trig, ms("2025-01-01T10:00:30"))
    for minute in range(1, 5):
        now = ms("2025-01-01T10:00") + minute * 60_000
        await store.write(lambda tx, now=now: fire_due_triggers(tx, leader_epoch=epoch, now_ms=now))  # type: ignore[misc]
    assert [s for s, _, _ in await events(store)] == ["fired", "skipped", "skipped", "fired"]


async def test_two_leaders_racing_for_the_same_window_fire_it_once(store: Store) -> None:
    trig = {"name": "r", "type": "cron", "schedule": "@hourly", "jitter": "30s"}
    _, epoch = await setup(store, trig, ms("2025-01-01T09:30"))
    now = ms("2025-01-01T10:00:45")
    await asyncio.gather(
        *(
            store.write(lambda tx: fire_due_triggers(tx, leader_epoch=epoch, now_ms=now))
            for _ in range(4)
        )
    )
    # A leader that read stale state (its cursor before the window) still cannot fire it again.
    await store.write(
        lambda tx: tx.execute("UPDATE triggers SET last_due_ms = NULL, next_due_ms = NULL")
    )
    await store.write(lambda tx: fire_due_triggers(tx, leader_epoch=epoch, now_ms=now))
    assert len(await tasks(store)) == 1
    # A deposed leader (its term expired, another Hub took over) is fenced off entirely.
    await store.write(lambda tx: tx.execute("UPDATE leases SET expires_ms = 0"))
    new_epoch = await store.write(lambda tx: acquire_or_renew(tx, HUB_LEADER, "hub-b", 3_600_000))
    assert new_epoch == epoch + 1
    with pytest.raises(FencedError):
        await store.write(
            lambda tx: fire_due_triggers(tx, leader_epoch=epoch, now_ms=ms("2025-01-01T11:00:45"))
        )
    assert len(await tasks(store)) == 1


async def test_a_trigger_added_later_does_not_back_fill_and_a_removed_one_stops(
    store: Store,
) -> None:
    dep = await deployment(store, "d")
    config = Config.model_validate(
        {"triggers": [{"name": "a", "type": "cron", "schedule": "@every 1m"}]}
    )
    await store.write(lambda tx: sync_triggers(tx, dep, config))
    row = await store.one("SELECT * FROM triggers")
    assert row is not None and row["next_due_ms"] > row["active_since_ms"]
    await store.write(lambda tx: sync_triggers(tx, dep, config))  # unchanged: kept as is
    assert await store.one("SELECT * FROM triggers") == row
    await store.write(lambda tx: sync_triggers(tx, dep, Config.model_validate({})))
    assert await store.all("SELECT * FROM triggers") == []
