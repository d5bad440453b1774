"""Group commit on SQLite: a group of waiting writes runs optimistically under one COMMIT, with no
savepoints, and a function that fails rolls back alone (the group is re-run with a savepoint each)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agen.errors import ConflictError
from agen.store import SQLiteStore, Tx

GROUP = 20


async def _grouped(store: SQLiteStore, fns: list[Any]) -> list[Any]:
    """Run ``fns`` as one writer batch: the first write holds the writer until all the others are queued."""
    started, go = threading.Event(), threading.Event()

    def hold(tx: Tx) -> None:
        started.set()
        deadline = time.monotonic() + 30
        while store._queue.qsize() < len(fns) and time.monotonic() < deadline:
            go.wait(0.001)

    first = asyncio.ensure_future(store.write(hold))
    while not started.is_set():  # noqa: ASYNC110 - the writer thread sets it
        await asyncio.sleep(0.001)
    results = await asyncio.gather(*(store.write(fn) for fn in fns), return_exceptions=True)
    await first
    return results


def _insert(i: int, runs: list[int]) -> Any:
    def fn(tx: Tx) -> int:
        runs.append(i)
        tx.execute("INSERT INTO g (id) VALUES (?)", (i,))
        if i == 7:
            tx.execute("INSERT INTO g (id) VALUES (0)")  # duplicate key: this function fails
        return i

    return fn


@pytest.fixture
async def traced(tmp_path: Path) -> Any:
    log: list[str] = []
    store = await SQLiteStore.open(tmp_path / "g.db", trace=log.append)
    await store.write(lambda tx: tx.execute("CREATE TABLE g (id INTEGER PRIMARY KEY)"))
    yield store, log
    await store.close()


async def test_a_group_of_writes_that_all_succeed_commits_once_without_savepoints(
    traced: Any,
) -> None:
    store, log = traced
    runs: list[int] = []
    log.clear()
    results = await _grouped(store, [_insert(i, runs) for i in range(100, 100 + GROUP)])
    assert results == list(range(100, 100 + GROUP))
    assert not [s for s in log if s.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK"))]
    assert log.count("COMMIT") == 2  # the holding write's batch, then the whole group in one
    assert await store.scalar("SELECT COUNT(*) FROM g") == GROUP


async def test_a_failing_write_in_a_group_rolls_back_alone_and_the_others_commit_once(
    traced: Any,
) -> None:
    store, _log = traced
    await store.write(lambda tx: tx.execute("INSERT INTO g (id) VALUES (0)"))
    runs: list[int] = []
    results = await _grouped(store, [_insert(i, runs) for i in range(1, 1 + GROUP)])
    assert isinstance(results[6], ConflictError)
    assert [r for k, r in enumerate(results) if k != 6] == [
        i for i in range(1, 1 + GROUP) if i != 7
    ]
    rows = await store.all("SELECT id FROM g ORDER BY id")
    assert [r["id"] for r in rows] == [0, *(i for i in range(1, 1 + GROUP) if i != 7)]
