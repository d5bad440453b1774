"""`agen events --type T --limit N`: the newest N events *of type T*, however many others came after."""

from __future__ import annotations

from pathlib import Path

from agen.hub.events.log import EventFilter, read_events, tail_start
from agen.store import SQLiteStore


async def test_the_tail_counts_matching_events_only(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    try:
        await store.write(
            lambda tx: [
                tx.event("default", t, deployment="a")
                for t in ("task.succeeded", "task.succeeded", "task.succeeded")
            ]
        )
        await store.write(
            lambda tx: [tx.event("default", "instance.started", deployment="a") for _ in range(700)]
        )
        for flt in (
            EventFilter(types=("task.succeeded",)),
            EventFilter(types=("task.",)),
        ):  # SQL and Python filters
            after = await tail_start(store, ["default"], 2, flt)
            page = await read_events(store, ["default"], after=after, flt=flt, limit=2)
            assert [e["seq"] for e in page.events] == [2, 3]
        assert (
            await tail_start(store, ["default"], 2, EventFilter(types=("budget.",))) == 0
        )  # none: from the start
        assert await tail_start(store, ["other"], 2) == 0
    finally:
        await store.close()
