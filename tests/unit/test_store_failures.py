"""The Store's writer survives failures: a full disk, a function that ends the transaction, a crashing callback.

Every write either commits and says so, or fails with a StoreError; none waits for ever, and ``health()``
says when the store cannot take writes. A hang would show as the 30 s deadline below, not as a pass.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from functools import partial
from typing import Any

import pytest

from agen.errors import StoreError
from agen.store import SQLiteStore, Tx

# SQLite only: these inject SQLite faults (disk full, a dead writer thread).
pytestmark = pytest.mark.sqlite_only

DEADLINE_S = 30  # generous: only a hung write gets near it


def _insert_session(tx: Tx, sid: str) -> str:
    tx.execute(
        "INSERT INTO sessions (id, namespace, deployment, key, created_ms, updated_ms) VALUES (?,?,?,?,?,?)",
        (sid, "default", "d", sid, tx.now_ms, tx.now_ms),
    )
    return sid


def _fill_the_disk(tx: Tx) -> None:
    """Make this connection's file 'full' (max_page_count = its size), then need more pages: SQLITE_FULL,
    which SQLite answers by rolling the whole transaction back itself, as on a real full disk."""
    tx.execute(f"PRAGMA max_page_count={int(tx.scalar('PRAGMA page_count'))}")
    _needs_space(tx)


def _needs_space(tx: Tx) -> str:
    tx.execute("CREATE TABLE IF NOT EXISTS filler (b BLOB)")
    tx.execute("INSERT INTO filler VALUES (zeroblob(1000000))")
    return "stored"


def _free_the_disk(tx: Tx) -> None:
    tx.execute("PRAGMA max_page_count=1073741823")


async def _write(store: SQLiteStore, fn: Any) -> Any:
    return await asyncio.wait_for(store.write(fn), DEADLINE_S)


async def _sessions(store: SQLiteStore) -> set[str]:
    return {r["id"] for r in await store.all("SELECT id FROM sessions")}


async def test_a_full_disk_fails_the_write_with_a_store_error_and_the_writer_keeps_serving(
    store: SQLiteStore,
) -> None:
    with pytest.raises(StoreError, match="full"):
        await _write(store, _fill_the_disk)
    health = store.health()
    assert not health.ok and health.error is not None and "full" in health.error
    with pytest.raises(StoreError, match="full"):  # still full: still a clear error, never a hang
        await _write(store, _needs_space)
    await _write(store, _free_the_disk)
    assert await _write(store, _needs_space) == "stored"
    assert store.health().ok


async def test_a_full_disk_inside_a_group_commit_fails_every_write_it_rolled_back(
    store: SQLiteStore,
) -> None:
    """SQLite drops the whole shared transaction: no write in it may report success."""
    writes: list[Awaitable[str | None]] = [
        store.write(partial(_insert_session, sid=f"s{i}")) for i in range(20)
    ]
    writes.insert(10, store.write(_fill_the_disk))
    results = await asyncio.wait_for(asyncio.gather(*writes, return_exceptions=True), DEADLINE_S)
    assert isinstance(results[10], StoreError)
    assert all(isinstance(r, (str, StoreError)) for r in results), results
    assert await _sessions(store) == {r for r in results if isinstance(r, str)}
    await _write(store, _free_the_disk)
    assert await _write(store, lambda tx: _insert_session(tx, "after")) == "after"


async def test_a_function_that_rolls_back_itself_fails_its_write_and_the_writer_keeps_serving(
    store: SQLiteStore,
) -> None:
    def rollback_and_raise(tx: Tx) -> None:
        _insert_session(tx, "gone")
        tx.execute("ROLLBACK")
        raise RuntimeError("gave up")

    def rollback_and_return(tx: Tx) -> str:
        _insert_session(tx, "gone-too")
        tx.execute("ROLLBACK")
        return "looks fine"

    with pytest.raises(StoreError, match="rolled the transaction back"):
        await _write(store, rollback_and_raise)
    with pytest.raises(
        StoreError, match="ended the transaction itself"
    ):  # not a success that saved nothing
        await _write(store, rollback_and_return)
    assert await _write(store, lambda tx: _insert_session(tx, "next")) == "next"
    assert await _sessions(store) == {"next"}
    assert store.health().ok  # a function's own mistake is not a store fault


async def test_an_after_commit_callback_error_is_logged_and_the_write_still_succeeds(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> None:
        raise ValueError("callback bug")

    def fn(tx: Tx) -> str:
        tx.after_commit(broken)
        return _insert_session(tx, "kept")

    with caplog.at_level(logging.ERROR, logger="agen.store"):
        assert await _write(store, fn) == "kept"
    failures = [r for r in caplog.records if "after-commit callback" in r.getMessage()]
    assert (
        len(failures) == 1
        and "broken" in failures[0].getMessage()
        and failures[0].exc_info is not None
    )
    assert await _write(store, lambda tx: _insert_session(tx, "next")) == "next"


async def test_after_the_writer_stops_every_write_fails_at_once_and_health_says_so(
    store: SQLiteStore,
) -> None:
    def stop_the_thread() -> None:
        raise SystemExit("a callback ended the writer thread")

    def fn(tx: Tx) -> str:
        tx.after_commit(stop_the_thread)
        return _insert_session(tx, "committed")

    assert await _write(store, fn) == "committed"  # it did commit: the caller hears the truth
    with pytest.raises(StoreError, match="stopped taking writes"):
        await _write(store, lambda tx: _insert_session(tx, "refused"))
    with pytest.raises(StoreError, match="stopped taking writes"):
        await asyncio.wait_for(asyncio.to_thread(store.write_sync, lambda tx: None), DEADLINE_S)
    health = store.health()
    assert not health.ok and health.error is not None and "restart agen" in health.error
    assert await _sessions(store) == {"committed"}


async def test_a_lasting_fault_is_logged_once_and_its_clearing_once(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agen.store"):
        with pytest.raises(StoreError):
            await _write(store, _fill_the_disk)
        for _ in range(3):
            with pytest.raises(StoreError):
                await _write(store, _needs_space)
        await _write(store, _free_the_disk)
        await _write(store, lambda tx: _insert_session(tx, "ok"))
        await _write(store, lambda tx: _insert_session(tx, "ok2"))
    lines = [r.getMessage() for r in caplog.records if r.name == "agen.store"]
    assert sum("cannot be written" in ln for ln in lines) == 1, lines
    assert sum("takes writes again" in ln for ln in lines) == 1, lines
