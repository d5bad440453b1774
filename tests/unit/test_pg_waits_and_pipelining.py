"""Two Postgres store mechanisms the task path leans on.

``wait_for_change``: a waiter that reads what it waits for again anyway (GetTask) is woken by this
process's own commit with events at once, and by another process's commit through its NOTIFY, with
no read of the event head. ``executemany``: its statements ride on the transaction's next round trip
(a pipeline), in order, and an error in them still fails the write with its own message."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agen.errors import ConflictError
from agen.store import Tx


@pytest.fixture
async def two_stores(pg_url: str) -> AsyncIterator[tuple[Any, Any]]:
    """Two stores on one database: each has its own pool and its own LISTEN connection, as two
    processes (two Hubs) do."""
    from agen.store.postgres import PostgresStore

    here, there = await PostgresStore.open(pg_url), await PostgresStore.open(pg_url)
    yield here, there
    await here.close()
    await there.close()


def _event(tx: Tx) -> None:
    tx.event("default", "test.changed", data={"n": 1})


async def test_a_commit_here_or_in_another_process_wakes_a_change_waiter(
    two_stores: tuple[Any, Any],
) -> None:
    here, there = two_stores
    seen = await here.wait_for_change(-1, 0)
    assert await here.wait_for_change(seen, 0) == seen  # nothing committed: no change

    waiting = asyncio.ensure_future(here.wait_for_change(seen, 60))
    await here.write(_event)  # this process's own commit: no read needed to know
    after_local = await asyncio.wait_for(waiting, 30)
    assert after_local != seen

    waiting = asyncio.ensure_future(here.wait_for_change(after_local, 60))
    await there.write(_event)  # another process's: its NOTIFY wakes the waiter
    assert await asyncio.wait_for(waiting, 30) != after_local


async def test_executemany_rides_with_the_next_statement_in_order_and_its_errors_still_fail_the_write(
    pg_url: str,
) -> None:
    from agen.store.postgres import PostgresStore

    store = await PostgresStore.open(pg_url, pool_size=1)  # one connection: reused after a failure
    try:
        await store.write(lambda tx: tx.execute("CREATE TABLE m (id INTEGER PRIMARY KEY)"))

        def insert_then_count(tx: Tx) -> int:
            tx.executemany("INSERT INTO m (id) VALUES (?)", [(1,), (2,), (3,)])
            return int(tx.scalar("SELECT COUNT(*) FROM m"))  # sees the rows sent ahead of it

        assert await store.write(insert_then_count) == 3

        def duplicate(tx: Tx) -> None:
            tx.executemany("INSERT INTO m (id) VALUES (?)", [(4,), (4,)])  # fails at the COMMIT

        with pytest.raises(ConflictError, match="duplicate key"):
            await store.write(duplicate)

        def last_statement(tx: Tx) -> None:
            tx.executemany("INSERT INTO m (id) VALUES (?)", [(5,)])
            _event(tx)

        await store.write(last_statement)  # nothing after it: sent with the events and COMMIT
        ids = [r["id"] for r in await store.all("SELECT id FROM m ORDER BY id")]
        assert ids == [1, 2, 3, 5]  # the failed write left nothing
    finally:
        await store.close()
