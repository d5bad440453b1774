from __future__ import annotations

import asyncio
import sqlite3
from functools import partial
from pathlib import Path

import pytest

from agen.errors import ConflictError, SchemaTooNewError, StoreError
from agen.store import SQLiteStore, Store, Tx
from agen.store.migrate import known_migrations, split_statements

CORE_TABLES = {
    "definitions",
    "deployments",
    "assignments",
    "nests",
    "instances",
    "tasks",
    "triggers",
    "trigger_events",
    "approvals",
    "tokens",
    "sessions",
    "conversations",
    "messages",
    "runs",
    "spans",
    "effects",
    "usage",
    "provider_holds",
    "events",
    "schema_migrations",
}


def tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


async def test_migrations_create_core_tables_on_an_empty_file(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "a.db")
    try:
        assert tables(tmp_path / "a.db") >= CORE_TABLES
        assert store.schema_version() == known_migrations()[-1].version
        rows = await store.all("SELECT version, name FROM schema_migrations ORDER BY version")
        assert [r["version"] for r in rows] == [m.version for m in known_migrations()]
    finally:
        await store.close()


async def test_reopening_applies_nothing_twice(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    for _ in range(3):
        store = await SQLiteStore.open(path)
        await store.close()
    conn = sqlite3.connect(path)
    count = conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0]
    conn.close()
    assert count == len(known_migrations())


async def test_store_written_by_a_newer_schema_is_refused_with_a_clear_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.db"
    store = await SQLiteStore.open(path)
    await store.close()
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (9999, 'from_the_future', 0)"
    )
    conn.commit()
    conn.close()
    with pytest.raises(SchemaTooNewError) as info:
        await SQLiteStore.open(path)
    assert "newer agen" in str(info.value) and "9999" in str(info.value)


async def test_wal_foreign_keys_and_busy_timeout_are_on(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "a.db")
    try:
        mode = await store.write(lambda tx: tx.scalar("PRAGMA journal_mode"))
        fk = await store.write(lambda tx: tx.scalar("PRAGMA foreign_keys"))
        busy = await store.write(lambda tx: tx.scalar("PRAGMA busy_timeout"))
        assert (mode, fk) == ("wal", 1) and busy >= 1000
    finally:
        await store.close()


def _insert_session(tx: Tx, sid: str) -> str:
    tx.execute(
        "INSERT INTO sessions (id, namespace, deployment, key, created_ms, updated_ms) VALUES (?,?,?,?,?,?)",
        (sid, "default", "d", sid, tx.now_ms, tx.now_ms),
    )
    tx.event("default", "session.created", data={"id": sid})
    return sid


async def test_event_is_written_in_the_same_transaction_as_the_change(store: Store) -> None:
    def fails_after_event(tx: Tx) -> None:
        _insert_session(tx, "s1")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await store.write(fails_after_event)
    assert await store.scalar("SELECT COUNT(*) FROM sessions") == 0
    assert await store.scalar("SELECT COUNT(*) FROM events") == 0
    await store.write(lambda tx: _insert_session(tx, "s2"))
    assert await store.scalar("SELECT COUNT(*) FROM events WHERE type='session.created'") == 1


async def test_a_failing_transaction_among_concurrent_writes_rolls_back_alone(store: Store) -> None:
    def dup(tx: Tx) -> None:
        _insert_session(tx, "same")

    results = await asyncio.gather(
        *(store.write(partial(_insert_session, sid=f"s{i}")) for i in range(50)),
        store.write(dup),
        store.write(dup),
        return_exceptions=True,
    )
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(errors) == 1 and isinstance(errors[0], ConflictError)
    assert await store.scalar("SELECT COUNT(*) FROM sessions") == 51
    seqs = [r["seq"] for r in await store.all("SELECT seq FROM events ORDER BY seq")]
    assert seqs == sorted(set(seqs)) and len(seqs) == 51


async def test_dedupe_key_writes_an_announce_once_event_once(store: Store) -> None:
    first = await store.write(lambda tx: tx.event("default", "budget.threshold", dedupe_key="k"))
    second = await store.write(lambda tx: tx.event("default", "budget.threshold", dedupe_key="k"))
    assert first is not None and second is None


async def test_wait_for_events_is_woken_by_a_local_commit_not_by_polling(tmp_path: Path) -> None:
    store = await SQLiteStore.open(
        tmp_path / "a.db", poll_s=3600
    )  # only a wake can end the wait in time
    try:
        waiter = asyncio.create_task(store.wait_for_events(0, timeout_s=3600))
        await asyncio.sleep(0)  # let it start waiting
        await store.write(lambda tx: tx.event("default", "x"))
        assert await asyncio.wait_for(waiter, 30) >= 1
    finally:
        await store.close()


async def test_two_stores_on_one_file_both_write(tmp_path: Path) -> None:
    a = await SQLiteStore.open(tmp_path / "a.db")
    b = await SQLiteStore.open(tmp_path / "a.db")
    try:
        await asyncio.gather(
            *(a.write(partial(_insert_session, sid=f"a{i}")) for i in range(20)),
            *(b.write(partial(_insert_session, sid=f"b{i}")) for i in range(20)),
        )
        assert await a.scalar("SELECT COUNT(*) FROM sessions") == 40
    finally:
        await a.close()
        await b.close()


def test_split_statements_keeps_semicolons_inside_strings() -> None:
    sql = "-- c\nCREATE TABLE t (a TEXT DEFAULT ';');\nINSERT INTO t VALUES ('x;y');\n-- end\n"
    assert split_statements(sql) == [
        "-- c\nCREATE TABLE t (a TEXT DEFAULT ';');",
        "INSERT INTO t VALUES ('x;y');",
    ]


async def test_a_read_after_a_committed_write_sees_it_even_with_concurrent_reads(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "a.db", readers=1)
    try:
        await store.write(lambda tx: [_insert_session(tx, f"seed{i}") for i in range(200)])
        stop = asyncio.Event()

        async def background_reads() -> None:
            while not stop.is_set():
                await store.all("SELECT * FROM sessions")

        readers = [asyncio.create_task(background_reads()) for _ in range(4)]
        try:
            for i in range(100):
                await store.write(partial(_insert_session, sid=f"w{i}"))
                assert (
                    await store.scalar("SELECT COUNT(*) FROM sessions WHERE id = ?", (f"w{i}",))
                    == 1
                )
        finally:
            stop.set()
            await asyncio.gather(*readers)
    finally:
        await store.close()


async def test_read_functions_see_committed_writes_on_a_read_only_connection_off_the_writer(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(
        tmp_path / "my agen #1 %20?" / "s.db"
    )  # a path a URI must escape
    try:
        await store.write(lambda tx: tx.event("default", "demo.one"))

        def count(tx: Tx) -> tuple[int, str]:
            import threading

            return int(
                tx.scalar("SELECT COUNT(*) FROM events WHERE type LIKE 'demo.%'")
            ), threading.current_thread().name

        n, thread = await store.read(count)
        assert n == 1 and thread.startswith("agen-read")  # not the writer thread
        await store.write(lambda tx: tx.event("default", "demo.two"))
        assert (await store.read(count))[0] == 2  # a read after a committed write sees it
        with pytest.raises(StoreError, match="readonly"):  # a read function cannot write by mistake
            await store.read(lambda tx: tx.event("default", "demo.three"))
        assert (await store.read(count))[0] == 2
    finally:
        await store.close()


async def test_none_and_booleans_are_stored_as_null_and_integers(tmp_path: Path) -> None:
    """The SQLite adapter registers cheap adapters for None and bool (see agen/store/sqlite.py): they
    must bind exactly as sqlite3 binds them without one."""
    store = await SQLiteStore.open(tmp_path / "a.db")
    try:
        await store.write(lambda tx: tx.execute("CREATE TABLE t (a, b, c)"))
        await store.write(
            lambda tx: tx.execute("INSERT INTO t VALUES (?, ?, ?)", (None, True, False))
        )
        row = await store.one("SELECT a, b, c, typeof(a) AS ta, typeof(b) AS tb FROM t")
    finally:
        await store.close()
    assert row == {"a": None, "b": 1, "c": 0, "ta": "null", "tb": "integer"}
