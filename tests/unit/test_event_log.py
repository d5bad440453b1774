"""ListEvents: cursor, type prefix / label / deployment / severity filters, wait, retention."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agen.hub.events.log import EventFilter, list_events, prune_events, read_events, tail_start
from agen.store import SQLiteStore, Store


async def test_filters_cursor_and_resume_across_a_store_restart(tmp_path: Path) -> None:
    path = tmp_path / "agen.db"
    store = await SQLiteStore.open(path)
    await store.write(
        lambda tx: (
            tx.event("default", "task.queued", deployment="a", labels={"team": "x"}),
            tx.event("default", "task.failed", deployment="b", severity="warning"),
            tx.event("default", "deployment.created", deployment="a"),
            tx.event("other", "task.queued", deployment="a"),
            tx.event(
                "default",
                "budget.threshold",
                deployment="a",
                severity="critical",
                labels={"team": "x"},
            ),
        )
    )
    page = await read_events(store, ["default"], flt=EventFilter(types=("task.",)))
    assert [e["type"] for e in page.events] == ["task.queued", "task.failed"]
    page = await read_events(store, ["default"], flt=EventFilter(severity="warning"))
    assert [e["type"] for e in page.events] == ["task.failed", "budget.threshold"]
    page = await read_events(
        store, ["default"], flt=EventFilter(labels={"team": "x"}, deployment="a")
    )
    assert [e["type"] for e in page.events] == ["task.queued", "budget.threshold"]
    assert page.events[0]["labels"] == {"team": "x"}

    first = await read_events(store, ["default"], limit=2)
    cursor = first.cursor
    await store.close()

    store = await SQLiteStore.open(path)
    await store.write(lambda tx: tx.event("default", "task.started"))
    rest = await read_events(store, ["default"], after=cursor, limit=50)
    seen = [e["seq"] for e in first.events] + [e["seq"] for e in rest.events]
    all_default = [
        r["seq"]
        for r in await store.all("SELECT seq FROM events WHERE namespace = 'default' ORDER BY seq")
    ]
    assert seen == all_default  # nothing lost, nothing repeated
    assert await tail_start(store, ["default"], 2) == all_default[-2] - 1
    await store.close()


async def test_wait_returns_when_a_matching_event_commits(store: Store) -> None:
    await store.write(lambda tx: tx.event("default", "noise"))
    waiter = asyncio.create_task(
        list_events(store, ["default"], flt=EventFilter(types=("task.",)), wait_s=10)
    )
    await asyncio.sleep(0.05)
    await store.write(lambda tx: tx.event("default", "more.noise"))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await store.write(lambda tx: tx.event("default", "task.queued"))
    page = await asyncio.wait_for(waiter, 5)
    assert [e["type"] for e in page.events] == ["task.queued"]
    empty = await list_events(store, ["default"], after=page.cursor, wait_s=0.1)
    assert empty.events == [] and empty.cursor == page.cursor


async def test_events_older_than_seven_days_are_pruned_and_seq_keeps_climbing(store: Store) -> None:
    await store.write(lambda tx: tx.event("default", "old"))
    old_seq = int(await store.scalar("SELECT MAX(seq) FROM events"))
    later = int(await store.scalar("SELECT created_ms FROM events")) + 8 * 86_400_000
    assert await store.write(lambda tx: prune_events(tx, later)) == 1
    await store.write(lambda tx: tx.event("default", "new"))
    seq = int(await store.scalar("SELECT seq FROM events WHERE type = 'new'"))
    assert seq > old_seq
