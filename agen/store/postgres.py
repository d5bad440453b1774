"""Postgres adapter (psycopg 3): the same Store port and transaction functions as SQLite (DESIGN.md §4).

Transaction functions are plain synchronous functions, so they run on a worker thread over a connection of
psycopg's sync ``ConnectionPool``: an async pool would need one thread hop per statement to serve a sync
``fn`` (the hop SQLite's writer thread was built to avoid), a thread with a sync connection needs one per
transaction.

Writes take one transaction-level advisory lock first, so write transactions commit one at a time across
every process on the database, as SQLite's single writer does. The hub code relies on that (the next
``tasks.seq`` is ``MAX(seq) + 1``; the event log's seq order must be commit order for the cursors that read
it). Leasing writes (``write_leasing``) take it shared and run side by side: the lease query locks the rows
it leases ``FOR UPDATE SKIP LOCKED``, their events take their seqs at commit under the event lock, and
decisions read from rows they do not lock wait for the lease lock (agen.store.pg_locks). Committed events wake waiters through LISTEN/NOTIFY (``agen_events``, payload: the newest seq); a Hub
that makes work leasable tells the Hubs of other processes on ``agen_work`` (``wake_others``, payload: the
sender's id, so a process does not wake itself twice).

``url`` never holds the password (it is printed in banners and errors); ``connect_url`` does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import psycopg
import psycopg.errors
from psycopg import sql as pgsql
from psycopg.adapt import Dumper
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from agen.errors import AgenError, ConflictError, StoreError, UnavailableError
from agen.store._pg_migrate import migrate_postgres
from agen.store._pg_sql import to_pg
from agen.store.base import Params, Row, Store, Tx, dumps, new_ulid, now_ms
from agen.store.locate import redact_url
from agen.store.pg_locks import LEASE_LOCK_KEY

T = TypeVar("T")
log = logging.getLogger("agen.store")

CHANNEL = "agen_events"
WAKE_CHANNEL = "agen_work"
_WRITE_LOCK_KEY = 0x6167656E_777269  # "agen" "wri": every write; leasing writes share it
_EVENT_LOCK_KEY = (
    0x6167656E_657673  # "agen" "evs": a leasing write appends its events and commits under it
)
CONNECT_TIMEOUT_S = 10
MAX_RETRIES = 5  # serialization failures and deadlocks are retried this many times, then reported

_EVENT_COLUMNS = (
    "INSERT INTO events (id, namespace, type, severity, deployment, task_id, run_id, labels, data, dedupe_key,"
    " created_ms) VALUES "
)
_EVENT_SQL = to_pg(
    _EVENT_COLUMNS + "(?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL"
    " DO NOTHING RETURNING seq"
)
_RETRYABLE = (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected)
# Pooled connections are in autocommit mode and transactions are opened and closed by hand, so that BEGIN
# and the write lock travel with the transaction's first statement (pipelined) and the NOTIFY with the
# COMMIT: no round trip of their own (a lease is a handful of statements, so the saved round trips are a
# good share of its time).
_BEGIN_WRITE = ("BEGIN", f"SELECT pg_advisory_xact_lock({_WRITE_LOCK_KEY})")
_BEGIN_LEASING = ("BEGIN", f"SELECT pg_advisory_xact_lock_shared({_WRITE_LOCK_KEY})")
# A leasing write that must decide from rows it has not locked (conversations, named locks, budgets) takes
# the lease lock first (agen.store.pg_locks), then the event lock when it appends an event before commit:
# always in that order, so two leasing writes never wait on each other in a cycle.
_LOCK_EVENTS_SERIAL = (
    f"SELECT pg_advisory_xact_lock({LEASE_LOCK_KEY})",
    f"SELECT pg_advisory_xact_lock({_EVENT_LOCK_KEY})",
)
_BEGIN_READ = ("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",)


class _BoolAsInt(Dumper):
    """SQLite has no booleans and the schema keeps flags as 0/1 integers: a Python bool is sent as '1' or '0'
    of unknown type, which Postgres reads as an integer for a column and as a boolean in ``CASE WHEN ?``."""

    oid = 0

    def dump(self, obj: Any) -> bytes:
        return b"1" if obj else b"0"


def _configure(conn: psycopg.Connection[Any]) -> None:
    conn.adapters.register_dumper(bool, _BoolAsInt)


def _end_transaction(conn: psycopg.Connection[Any]) -> None:
    """Roll back whatever transaction is still open on ``conn`` (a failed write, a finished read)."""
    if conn.closed or conn.broken:
        return
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        with contextlib.suppress(psycopg.Error):
            conn.execute("ROLLBACK")


class PostgresTx:
    """Tx over one pooled connection inside one transaction.

    In a leasing write (``leasing=True``) an event without a dedupe key is kept until commit and appended
    then, under the event lock, in the round trip that commits (``commit_sql``): leasing writes run side by
    side, so their events must take their seqs one transaction at a time, right before commit, for seq order
    to stay commit order. ``event`` returns None for such an event (its seq is not known before commit)."""

    __slots__ = ("_begin", "_callbacks", "_conn", "_leasing", "_pending", "max_event_seq", "now_ms")
    dialect = "postgres"

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        *,
        begin: tuple[str, ...] = (),
        leasing: bool = False,
    ) -> None:
        self._conn = conn
        self._begin = begin  # sent ahead of the first statement, in the same round trip
        self.now_ms = now_ms()
        self.max_event_seq = 0
        self._callbacks: list[Callable[[], None]] = []
        self._leasing = leasing
        self._pending: list[tuple[Any, ...]] = []

    def _cur(self, sql: str, params: Params) -> psycopg.Cursor[Any]:
        if self._pending and "events" in sql:  # a statement that may read this transaction's events
            self._append_pending()
        named = isinstance(params, Mapping)
        return self._send(to_pg(sql, named), params if named else tuple(params))

    def _send(self, query: str, params: Any = None) -> psycopg.Cursor[Any]:
        """Execute ``query``; the first one of the transaction carries BEGIN (and its lock) in a pipeline."""
        if not self._begin:
            return self._conn.execute(query, params)
        begin, self._begin = self._begin, ()
        with self._conn.pipeline():
            for stmt in begin:
                self._conn.execute(stmt)
            cur = self._conn.execute(query, params)
        return cur

    def execute(self, sql: str, params: Params = ()) -> int:
        return self._cur(sql, params).rowcount

    def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        items = list(rows)
        if not items:
            return 0
        if self._pending and "events" in sql:
            self._append_pending()
        if self._begin:
            self._conn.execute("; ".join(self._begin))
            self._begin = ()
        named = isinstance(items[0], Mapping)
        with self._conn.cursor() as cur:
            cur.executemany(to_pg(sql, named), items if named else [tuple(r) for r in items])
            return cur.rowcount

    def one(self, sql: str, params: Params = ()) -> Row | None:
        row: Row | None = self._cur(sql, params).fetchone()
        return row

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        return list(self._cur(sql, params).fetchall())

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self._cur(sql, params).fetchone()
        return None if row is None else next(iter(row.values()))

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
        values = (
            new_ulid(),
            namespace,
            type,
            severity,
            deployment,
            task_id,
            run_id,
            labels if isinstance(labels, str) else dumps(dict(labels)) if labels else "{}",
            dumps(dict(data)) if data else "{}",
            dedupe_key,
            self.now_ms,
        )
        if self._leasing:
            if dedupe_key is None:
                self._pending.append(values)
                return None
            self._append_pending()  # takes the event lock; this event follows the ones before it
        return self._insert(values)

    def _insert(self, values: tuple[Any, ...]) -> int | None:
        row = self._send(_EVENT_SQL, values).fetchone()
        if row is None:
            return None
        seq = int(row["seq"])
        self.max_event_seq = max(self.max_event_seq, seq)
        return seq

    def _append_pending(self) -> None:
        """Append the kept events now (a leasing write that reads events or needs a seq); from here on this
        transaction holds the lease and event locks to its end."""
        for stmt in _LOCK_EVENTS_SERIAL:  # in this order (see _LOCK_EVENTS_SERIAL)
            self._send(stmt)
        pending, self._pending = self._pending, []
        self._leasing = False  # the locks are held now: later events are appended as they come
        for values in pending:
            self._insert(values)

    def commit_sql(self) -> str:
        """What ends the transaction, in one round trip: a leasing write's kept events under the event lock,
        the NOTIFY that wakes event followers, COMMIT. Empty when the transaction never began."""
        if not self._pending:
            if self._begin:
                return ""
            seq = self.max_event_seq
            return f"SELECT pg_notify('{CHANNEL}', '{seq}'); COMMIT" if seq else "COMMIT"
        rows = ",".join(
            "(" + ",".join(pgsql.Literal(v).as_string(self._conn) for v in values) + ")"
            for values in self._pending
        )
        return "".join(f"{stmt}; " for stmt in self._begin) + (
            f"SELECT pg_advisory_xact_lock({_EVENT_LOCK_KEY});"
            f" WITH ins AS ({_EVENT_COLUMNS}{rows} RETURNING seq)"
            f" SELECT pg_notify('{CHANNEL}', MAX(seq)::text), MAX(seq) AS seq FROM ins; COMMIT"
        )

    def committed(self, cur: psycopg.Cursor[Any]) -> None:
        """Note the seq of the events ``commit_sql`` appended (the result with a ``seq`` column)."""
        while self._pending:
            if cur.description and any(c.name == "seq" for c in cur.description):
                row = cur.fetchone()
                if row is not None and row["seq"] is not None:
                    self.max_event_seq = max(self.max_event_seq, int(row["seq"]))
                return
            if not cur.nextset():
                return

    def after_commit(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)


def map_error(e: BaseException, where: str) -> BaseException:
    if isinstance(e, psycopg.errors.IntegrityError):
        return ConflictError(f"the change conflicts with stored data: {e}", store=where)
    if isinstance(e, psycopg.Error):
        return StoreError(f"store error on {where}: {e}", store=where)
    return e


class PostgresStore(Store):
    """A Store on a PostgreSQL database (``postgresql://...``)."""

    def __init__(self, url: str, *, pool_size: int = 4) -> None:
        self._connect_url = url
        self.url = self._where = redact_url(url)
        self._id = (
            new_ulid()
        )  # this process's wake-ups carry it, so its own listener passes them over
        self._woken: list[Callable[[], None]] = []
        self._wake_pending = False
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max(2, pool_size),
            open=False,
            kwargs={"row_factory": dict_row, "autocommit": True},
            configure=_configure,
            name="agen-store",
        )
        self._threads = concurrent.futures.ThreadPoolExecutor(
            max(2, pool_size), thread_name_prefix="agen-pg"
        )
        self._version = 0
        self._latest_seq = 0
        self._seq_changed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener: asyncio.Task[None] | None = None
        self._closed = False
        self._lock = threading.Lock()

    @classmethod
    async def open(cls, url: str, **kwargs: Any) -> PostgresStore:
        """Connect, migrate, and start listening for committed events."""
        store = cls(url, **kwargs)
        store._loop = asyncio.get_running_loop()
        store._seq_changed = asyncio.Event()
        try:
            await store._in_thread(store._open_sync)
        except BaseException:
            await store.close()
            raise
        store._latest_seq = int(
            await store.scalar("SELECT COALESCE(MAX(seq), 0) AS seq FROM events") or 0
        )
        ready = asyncio.Event()
        store._listener = asyncio.create_task(store._listen(ready), name="agen-pg-listen")
        await ready.wait()
        return store

    def _open_sync(self) -> None:
        try:
            # a connection of its own first: a server that is down fails here at once, not after the pool's wait
            with psycopg.connect(
                self._connect_url, row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT_S
            ) as conn:
                self._version = migrate_postgres(conn, self._where, now_ms())
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except AgenError:
            raise
        except Exception as e:
            raise StoreError(f"cannot open the store {self._where}: {e}", store=self._where) from e

    def schema_version(self) -> int:
        return self._version

    @property
    def connect_url(self) -> str:
        return self._connect_url

    # -- wake-ups across processes ---------------------------------------------------------

    def wake_others(self) -> None:
        """NOTIFY the other processes on this database, from a worker thread (never blocks the loop). Calls
        that arrive while one is waiting to be sent ride on it."""
        if self._closed or self._wake_pending:
            return
        self._wake_pending = True

        def send() -> None:
            self._wake_pending = False  # a call from here on needs a NOTIFY of its own
            try:
                with self._pool.connection() as conn:
                    conn.execute("SELECT pg_notify(%s, %s)", (WAKE_CHANNEL, self._id))
            except Exception as e:  # the others still find the work on their next idle poll
                log.warning("store %s: could not wake the other Hubs (%s)", self._where, e)

        with contextlib.suppress(RuntimeError):  # shut down meanwhile
            self._threads.submit(send)

    def on_woken(self, callback: Callable[[], None]) -> None:
        self._woken.append(callback)

    def _wake_local(self) -> None:
        for cb in list(self._woken):
            try:
                cb()
            except Exception:
                log.exception("store %s: a wake-up callback failed", self._where)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
        await asyncio.to_thread(self._threads.shutdown)
        await asyncio.to_thread(self._pool.close)

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._threads, fn)

    # -- writes ----------------------------------------------------------------------------

    async def write(self, fn: Callable[[Tx], T]) -> T:
        if self._closed:
            raise UnavailableError("the store is closed", store=self._where)
        return await self._in_thread(lambda: self.write_sync(fn))

    async def write_leasing(self, fn: Callable[[Tx], T]) -> T:
        """A write that runs beside other leasing writes, one at a time with every other write: the write lock
        is taken shared (``pg_advisory_xact_lock_shared``), its events are appended at commit under the event
        lock (``PostgresTx``), and ``fn`` calls ``serialize_leasing`` before a decision that reads rows it does
        not lock (agen.store.pg_locks)."""
        if self._closed:
            raise UnavailableError("the store is closed", store=self._where)
        return await self._in_thread(lambda: self.write_sync(fn, leasing=True))

    def write_sync(self, fn: Callable[[Tx], T], *, leasing: bool = False) -> T:
        for attempt in range(MAX_RETRIES + 1):
            try:
                return self._write_once(fn, leasing)
            except _RETRYABLE as e:
                if attempt == MAX_RETRIES:
                    raise StoreError(
                        f"write failed on {self._where} after {MAX_RETRIES} retries: {e}",
                        store=self._where,
                    ) from e
            except BaseException as e:
                mapped = map_error(e, self._where)
                if mapped is e:
                    raise
                raise mapped from e
        raise AssertionError("unreachable")

    def _write_once(self, fn: Callable[[Tx], T], leasing: bool) -> T:
        with self._pool.connection() as conn:
            tx = PostgresTx(
                conn, begin=_BEGIN_LEASING if leasing else _BEGIN_WRITE, leasing=leasing
            )
            try:
                value = fn(tx)
                end = tx.commit_sql()
                if end:
                    tx.committed(conn.execute(end))
            except BaseException:
                _end_transaction(conn)
                raise
        for cb in tx._callbacks:
            try:
                cb()
            except Exception:
                log.exception(
                    "store %s: an after-commit callback (%s) failed",
                    self._where,
                    getattr(cb, "__qualname__", repr(cb)),
                )
        if tx.max_event_seq and self._loop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._note_seq, tx.max_event_seq)
        return value

    # -- reads -----------------------------------------------------------------------------

    async def read(self, fn: Callable[[Tx], T]) -> T:
        """``fn`` over one snapshot (a read-only REPEATABLE READ transaction) on a pooled connection."""
        if self._closed:
            raise UnavailableError("the store is closed", store=self._where)
        return await self._in_thread(lambda: self._read(fn))

    def _read(self, fn: Callable[[Tx], T]) -> T:
        try:
            with self._pool.connection() as conn:
                try:
                    return fn(PostgresTx(conn, begin=_BEGIN_READ))
                finally:
                    _end_transaction(conn)
        except BaseException as e:
            mapped = map_error(e, self._where)
            if mapped is e:
                raise
            raise mapped from e

    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        if self._closed:
            raise UnavailableError("the store is closed", store=self._where)

        def run() -> list[Row]:
            try:
                with self._pool.connection() as conn:
                    return PostgresTx(conn).all(sql, params)
            except psycopg.Error as e:
                raise StoreError(f"read failed on {self._where}: {e}", store=self._where) from e

        return await self._in_thread(run)

    # -- events ----------------------------------------------------------------------------

    async def _listen(self, ready: asyncio.Event) -> None:
        """LISTEN on a connection of its own; every NOTIFY carries the newest committed seq."""
        while not self._closed:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._connect_url, autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    await conn.execute(f"LISTEN {WAKE_CHANNEL}")
                    # commits made while (re)connecting were not heard: look once
                    cur = await conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events")
                    row = await cur.fetchone()
                    self._note_seq(int(row[0]) if row else 0)
                    ready.set()
                    self._wake_local()  # work submitted while (re)connecting was not heard either
                    async for note in conn.notifies():
                        if note.channel == WAKE_CHANNEL:
                            if note.payload != self._id:
                                self._wake_local()
                            continue
                        with contextlib.suppress(ValueError):
                            self._note_seq(int(note.payload))
            except asyncio.CancelledError:
                raise
            except Exception as e:
                ready.set()
                log.warning(
                    "store %s: the event listener lost its connection (%s); reconnecting",
                    self._where,
                    e,
                )
                await asyncio.sleep(1.0)

    def _note_seq(self, seq: int) -> None:
        if seq > self._latest_seq:
            self._latest_seq = seq
            if self._seq_changed is not None:
                self._seq_changed.set()
                self._seq_changed = asyncio.Event()

    async def wait_for_events(self, after_seq: int, timeout_s: float) -> int:
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
                await asyncio.wait_for(ev.wait(), timeout=remaining)
