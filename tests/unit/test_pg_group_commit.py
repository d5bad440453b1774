"""Group commit on Postgres: writes that wait for a connection run together in one transaction, under one
COMMIT, each caller answered after it; a function that fails is rolled back with its group, and the group
runs again one function at a time, so only the failing one fails (the same rule as SQLite's writer)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agen.errors import ConflictError
from agen.store import Tx

GROUP = 20
POOL = 2


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[Any]:
    from agen.store.postgres import PostgresStore

    store = await PostgresStore.open(pg_url, pool_size=POOL)
    await store.write(lambda tx: tx.execute("CREATE TABLE g (id INTEGER PRIMARY KEY)"))
    yield store
    await store.close()


async def _grouped(store: Any, fns: list[Any]) -> list[Any]:
    """Run ``fns`` while every store thread is held by a write that waits until all of them are queued:
    the first thread set free takes them all."""
    started = [threading.Event() for _ in range(POOL)]
    go = threading.Event()

    def hold(k: int) -> Any:
        def fn(tx: Tx) -> None:
            started[k].set()
            go.wait(30)

        return fn

    holding = []
    for k in range(POOL):  # one at a time: a thread takes every write queued when it looks
        holding.append(asyncio.ensure_future(store.write(hold(k))))
        while not started[k].is_set():  # noqa: ASYNC110 - the store's thread sets it
            await asyncio.sleep(0.001)
    writes = [asyncio.ensure_future(store.write(fn)) for fn in fns]
    while len(store._queue) < len(fns):  # noqa: ASYNC110 - queued by the writes just started
        await asyncio.sleep(0.001)
    go.set()
    results = await asyncio.gather(*writes, return_exceptions=True)
    await asyncio.gather(*holding)
    return results


def _insert(i: int) -> Any:
    def fn(tx: Tx) -> tuple[int, str]:
        tx.execute("INSERT INTO g (id) VALUES (?)", (i,))
        if i == 7:
            tx.execute("INSERT INTO g (id) VALUES (0)")  # duplicate key: this function fails
        return i, str(tx.scalar("SELECT pg_current_xact_id()::text"))

    return fn


async def test_writes_waiting_together_commit_in_one_transaction(pg_store: Any) -> None:
    results = await _grouped(pg_store, [_insert(i) for i in range(100, 100 + GROUP)])
    assert [i for i, _xid in results] == list(range(100, 100 + GROUP))
    assert len({xid for _i, xid in results}) == 1  # one transaction, one COMMIT for the group
    # answered after the COMMIT: every row is there for any reader
    assert await pg_store.scalar("SELECT COUNT(*) FROM g") == GROUP


async def test_a_failing_write_in_a_group_fails_alone_and_the_others_commit(
    pg_store: Any,
) -> None:
    await pg_store.write(lambda tx: tx.execute("INSERT INTO g (id) VALUES (0)"))
    results = await _grouped(pg_store, [_insert(i) for i in range(1, 1 + GROUP)])
    assert isinstance(results[6], ConflictError)
    assert [r[0] for k, r in enumerate(results) if k != 6] == [
        i for i in range(1, 1 + GROUP) if i != 7
    ]
    rows = await pg_store.all("SELECT id FROM g ORDER BY id")
    assert [r["id"] for r in rows] == [0, *(i for i in range(1, 1 + GROUP) if i != 7)]


async def test_events_of_a_group_reach_a_follower_in_another_process_by_one_notify(
    pg_url: str, pg_store: Any
) -> None:
    """The events NOTIFY goes after the COMMIT (never inside it: it would hold PostgreSQL's
    database-wide notification lock through the flush); another store waiting for events wakes."""
    from agen.store.postgres import PostgresStore

    other = await PostgresStore.open(pg_url)
    try:
        head = int(await other.scalar("SELECT COALESCE(MAX(seq), 0) FROM events"))
        waiter = asyncio.ensure_future(other.wait_for_events(head, 30))

        def emit(i: int) -> Any:
            return lambda tx: tx.event("default", "group.event", data={"i": i})

        await _grouped(pg_store, [emit(i) for i in range(GROUP)])
        seen = await waiter
        assert seen != head
        count = await other.scalar("SELECT COUNT(*) FROM events WHERE type = 'group.event'")
        assert count == GROUP
    finally:
        await other.close()


async def test_a_deadlock_in_a_group_runs_the_group_again_and_fails_nobody(pg_store: Any) -> None:
    """PostgreSQL rolls a deadlocked or serialization-failed transaction back (psycopg files both under
    OperationalError, as it does a lost connection): the group's functions run again, none fails."""
    import psycopg.errors

    tries: list[int] = []

    def deadlocks_once(tx: Tx) -> int:
        tx.execute("INSERT INTO g (id) VALUES (500)")
        tries.append(1)
        if len(tries) == 1:
            raise psycopg.errors.DeadlockDetected("deadlock detected")
        return 500

    results = await _grouped(pg_store, [deadlocks_once, *(_insert(i) for i in range(1, 10))])
    assert results[0] == 500 and [r[0] for r in results[1:]] == list(range(1, 10))
    rows = await pg_store.all("SELECT id FROM g ORDER BY id")
    assert [r["id"] for r in rows] == [0, *range(1, 10), 500]  # _insert(7) adds 0 too
