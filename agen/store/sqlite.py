"""SQLite adapter: one writer thread with group commit, aiosqlite readers.

Why a writer thread: each hop between the event loop and a SQLite thread costs
~60 µs here, so awaiting every statement caps a 4-statement task near 1.5k/s.
Handing the writer whole transactions (plain functions) and committing every
transaction that is waiting under one COMMIT keeps the loop free and brings the
rate near the disk's fsync limit (DESIGN.md §4).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import queue
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from agen.errors import AgenError, StoreError, UnavailableError
from agen.store.base import Params, Row, Store, Tx, dumps, new_ulid, now_ms
from agen.store.migrate import applied_version, migrate_sqlite

T = TypeVar("T")

MAX_BATCH = 512
BUSY_TIMEOUT_MS = 10_000
# The writer's page cache (KiB; SQLite's default is 2 MiB): the hot task/event/run index pages stay in
# memory instead of being looked up in the WAL and read again on every statement.
CACHE_KIB = 65_536


_EVENT_SQL = (
    "INSERT INTO events (id, namespace, type, severity, deployment, task_id, run_id, labels, data, dedupe_key,"
    " created_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING"
)


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> Row:
    return {d[0]: v for d, v in zip(cursor.description, row, strict=True)}


def _configure(conn: sqlite3.Connection, synchronous: str) -> None:
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")


class _Tx:
    """Tx over the writer's connection; valid only inside one transaction function."""

    __slots__ = ("_callbacks", "_conn", "max_event_seq", "now_ms")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.now_ms = now_ms()
        self.max_event_seq = 0
        self._callbacks: list[Callable[[], None]] = []

    def execute(self, sql: str, params: Params = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        return self._conn.executemany(sql, rows).rowcount

    def one(self, sql: str, params: Params = ()) -> Row | None:
        cur = self._conn.execute(sql, params)
        row = cur.fetchone()
        return None if row is None else _dict_row(cur, row)

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        cur = self._conn.execute(sql, params)
        return [_dict_row(cur, r) for r in cur.fetchall()]

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self._conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def event(
        self,
        namespace: str,
        type: str,
        *,
        severity: str = "info",
        deployment: str | None = None,
        task_id: str | None = None,
        run_id: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        data: Mapping[str, Any] | None = None,
        dedupe_key: str | None = None,
    ) -> int | None:
        cur = self._conn.execute(
            _EVENT_SQL,
            (
                new_ulid(), namespace, type, severity, deployment, task_id, run_id,
                labels if isinstance(labels, str) else dumps(dict(labels)) if labels else "{}",
                dumps(dict(data)) if data else "{}", dedupe_key, self.now_ms,
            ),
        )
        if cur.rowcount == 0:
            return None
        seq: int = cur.lastrowid or 0
        if seq > self.max_event_seq:
            self.max_event_seq = seq
        return seq

    def after_commit(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)


_Item = tuple[Callable[[Tx], Any], "asyncio.AbstractEventLoop | None", Any]


class SQLiteStore(Store):
    """The local Store: a SQLite file in WAL mode."""

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL", readers: int = 2) -> None:
        self.path = Path(path)
        self.url = f"sqlite:{self.path}"
        if synchronous.upper() not in ("NORMAL", "FULL", "OFF"):
            raise StoreError(f"synchronous must be NORMAL, FULL or OFF (got {synchronous!r})")
        self._synchronous = synchronous.upper()
        self._n_readers = max(1, readers)
        self._readers: list[aiosqlite.Connection] = []
        self._next_reader = 0
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._version = 0
        self._latest_seq = 0
        self._seq_changed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._read_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._read_local = threading.local()
        self._read_conns: list[sqlite3.Connection] = []

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: str | Path, **kwargs: Any) -> SQLiteStore:
        """Open (creating if needed) and migrate the store, then start the writer."""
        store = cls(path, **kwargs)
        await asyncio.to_thread(store._start_writer)
        store._loop = asyncio.get_running_loop()
        store._seq_changed = asyncio.Event()
        for _ in range(store._n_readers):
            conn = await aiosqlite.connect(store.path)
            await conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await conn.execute("PRAGMA foreign_keys=ON")
            conn.row_factory = _dict_row  # type: ignore[assignment]
            store._readers.append(conn)
        store._latest_seq = int(await store.scalar("SELECT COALESCE(MAX(seq), 0) FROM events") or 0)
        return store

    @classmethod
    def open_sync(cls, path: str | Path, **kwargs: Any) -> SQLiteStore:
        """Open for synchronous use only (write_sync); async reads need open()."""
        store = cls(path, **kwargs)
        store._start_writer()
        return store

    def _start_writer(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ready: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._writer_main, args=(ready,), name=f"agen-store-writer:{self.path.name}", daemon=True
        )
        self._thread.start()
        self._version = ready.result()

    def schema_version(self) -> int:
        return self._version

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        if self._read_pool is not None:
            await asyncio.to_thread(self._read_pool.shutdown)
            for rc in self._read_conns:
                rc.close()
        for conn in self._readers:
            await conn.close()
        self._readers.clear()

    def close_sync(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join()

    # -- writes ----------------------------------------------------------------------------

    async def write(self, fn: Callable[[Tx], T]) -> T:
        if self._closed:
            raise UnavailableError("the store is closed", store=self.url)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._queue.put((fn, loop, fut))
        return await fut

    def write_sync(self, fn: Callable[[Tx], T]) -> T:
        if self._closed:
            raise UnavailableError("the store is closed", store=self.url)
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((fn, None, fut))
        return fut.result()

    def _writer_main(self, ready: concurrent.futures.Future[int]) -> None:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, cached_statements=512)
            _configure(conn, self._synchronous)
            version = migrate_sqlite(conn, str(self.path), now_ms())
        except AgenError as e:
            ready.set_exception(e)
            return
        except sqlite3.Error as e:
            ready.set_exception(StoreError(f"cannot open the store {self.path}: {e}", store=str(self.path)))
            return
        ready.set_result(version)
        try:
            self._writer_loop(conn)
        finally:
            conn.close()

    def _writer_loop(self, conn: sqlite3.Connection) -> None:
        q = self._queue
        while True:
            item = q.get()
            if item is None:
                return
            batch = [item]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    nxt = q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._run_batch(conn, batch)
            if stop:
                return

    def _run_batch(self, conn: sqlite3.Connection, batch: list[_Item]) -> None:
        results: list[tuple[Any, BaseException | None]] = []
        callbacks: list[Callable[[], None]] = []
        max_seq = 0
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            err: AgenError = UnavailableError(f"the store {self.path} is busy or unreadable: {e}; retry", store=str(self.path))
            self._resolve(batch, [(None, err)] * len(batch))
            return
        single = len(batch) == 1
        for fn, _loop, _fut in batch:
            tx = _Tx(conn)
            if not single:
                conn.execute("SAVEPOINT t")
            try:
                value = fn(tx)
            except BaseException as e:  # the caller gets its own exception back
                if single:
                    conn.execute("ROLLBACK")
                else:
                    conn.execute("ROLLBACK TO t")
                    conn.execute("RELEASE t")
                results.append((None, _map_error(e, self.path)))
                continue
            if not single:
                conn.execute("RELEASE t")
            results.append((value, None))
            callbacks.extend(tx._callbacks)
            max_seq = max(max_seq, tx.max_event_seq)
        if conn.in_transaction:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as e:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                err = StoreError(f"commit failed on {self.path}: {e}", store=str(self.path))
                results = [(None, err)] * len(batch)
                callbacks, max_seq = [], 0
        for cb in callbacks:
            with contextlib.suppress(Exception):
                cb()
        if max_seq and self._loop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._note_seq, max_seq)
        self._resolve(batch, results)

    @staticmethod
    def _resolve(batch: list[_Item], results: list[tuple[Any, BaseException | None]]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Any, Any, BaseException | None]]] = {}
        for (_fn, loop, fut), (value, exc) in zip(batch, results, strict=True):
            if loop is None:
                if exc is None:
                    fut.set_result(value)
                else:
                    fut.set_exception(exc)
            else:
                by_loop.setdefault(loop, []).append((fut, value, exc))
        for loop, items in by_loop.items():
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(_settle, items)

    def _note_seq(self, seq: int) -> None:
        if seq > self._latest_seq:
            self._latest_seq = seq
            if self._seq_changed is not None:
                self._seq_changed.set()
                self._seq_changed = asyncio.Event()

    # -- reads -----------------------------------------------------------------------------

    async def read(self, fn: Callable[[Tx], T]) -> T:
        """``fn`` over one snapshot (a read transaction) on a read-only connection of a small thread pool:
        reads that need several statements (a task with its details) keep the writer free."""
        if self._closed:
            raise UnavailableError("the store is closed", store=self.url)
        if self._read_pool is None:
            self._read_pool = concurrent.futures.ThreadPoolExecutor(self._n_readers, thread_name_prefix="agen-read")
        return await asyncio.get_running_loop().run_in_executor(self._read_pool, self._read, fn)

    def _read(self, fn: Callable[[Tx], T]) -> T:
        conn: sqlite3.Connection | None = getattr(self._read_local, "conn", None)
        if conn is None:
            uri = "file:" + urllib.parse.quote(str(self.path.resolve())) + "?mode=ro"  # spaces, '?', '#', '%'
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, cached_statements=256)
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            conn.execute(f"PRAGMA cache_size=-{CACHE_KIB // 4}")
            self._read_local.conn = conn
            self._read_conns.append(conn)
        try:
            conn.execute("BEGIN")
            try:
                return fn(_Tx(conn))
            finally:
                conn.execute("COMMIT")
        except BaseException as e:
            raise _map_error(e, self.path) from None

    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        if not self._readers:
            raise UnavailableError("the store is not open for reads", store=self.url)
        conn = self._readers[self._next_reader]
        self._next_reader = (self._next_reader + 1) % len(self._readers)
        try:
            # One operation on the reader's thread: a cursor left open between execute and fetch
            # would pin its snapshot, and another read interleaved on this connection would see it.
            rows = await conn.execute_fetchall(sql, params)
        except sqlite3.Error as e:
            raise StoreError(f"read failed on {self.path}: {e}", store=str(self.path)) from e
        return list(rows)  # type: ignore[arg-type]

    async def wait_for_events(self, after_seq: int, timeout_s: float) -> int:
        """Wake on local commits at once, and poll for commits by other processes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout_s)
        while True:
            if self._latest_seq > after_seq:
                return self._latest_seq
            remaining = deadline - loop.time()
            if remaining <= 0:
                return self._latest_seq
            ev = self._seq_changed
            assert ev is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ev.wait(), timeout=min(remaining, 0.5))
            seq = int(await self.scalar("SELECT COALESCE(MAX(seq), 0) FROM events") or 0)
            if seq > self._latest_seq:
                self._note_seq(seq)


def _settle(items: list[tuple[Any, Any, BaseException | None]]) -> None:
    for fut, value, exc in items:
        if fut.done():
            continue
        if exc is None:
            fut.set_result(value)
        else:
            fut.set_exception(exc)


def _map_error(e: BaseException, path: Path) -> BaseException:
    if isinstance(e, sqlite3.IntegrityError):
        from agen.errors import ConflictError

        return ConflictError(f"the change conflicts with stored data: {e}", store=str(path))
    if isinstance(e, sqlite3.Error):
        return StoreError(f"store error on {path}: {e}", store=str(path))
    return e


def read_schema_version(path: str | Path) -> int:
    """Schema version of a store file without migrating it (0 if missing)."""
    if not os.path.exists(path):
        return 0
    conn = sqlite3.connect(path)
    try:
        return applied_version(conn)
    finally:
        conn.close()
