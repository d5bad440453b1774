"""Postgres adapter (psycopg 3): the same Store port and transaction functions as SQLite (DESIGN.md §4).

Transaction functions are plain synchronous functions, so they run on a worker thread over a connection of
psycopg's sync ``ConnectionPool``: an async pool would need one thread hop per statement to serve a sync
``fn`` (the hop SQLite's writer thread was built to avoid), a thread with a sync connection needs one per
transaction.

Write transactions run side by side from every Hub and Nest on the database (READ COMMITTED), so Postgres
groups their commits; nothing fleet-wide is locked. A write locks the rows it changes (``UPDATE``, ``FOR
UPDATE SKIP LOCKED`` when leasing, ``ON CONFLICT``), and a decision read from rows it does not change (a
conversation's head, a named lock, an idempotency key, a budget) takes a key lock first
(agen.store.pg_locks). ``tasks.seq`` comes from a sequence. The event log keeps one order for its followers
without serialising commits: each event records its transaction id and followers read only settled
transactions, ordered by (xid, seq) (agen.store.event_log). After transactions with events commit, the
store sends a NOTIFY on ``agen_events``; the listeners then read the head again (NOTIFYs that arrive
meanwhile ride on that read). A Hub that makes work leasable tells the Hubs of other processes on
``agen_work`` (``wake_others``). Both go out in one statement of their own after the COMMIT, coalesced
(``_notify``), payload the sender's id, so a process does not wake itself twice. Live events (never
stored) go to the Hubs of other processes on ``agen_live`` (``send_live``), payload the sender's id
and the events; only a process that follows them (``on_live``: a Hub) LISTENs there, so a Nest or an
instance host on the same database is not sent every word of every answer.

``url`` never holds the password (it is printed in banners and errors); ``connect_url`` does.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import psycopg
import psycopg.errors
from psycopg import sql as pgsql
from psycopg.adapt import Dumper
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from agen.errors import AgenError, ConflictError, StoreError, UnavailableError
from agen.store import event_log
from agen.store._pg_migrate import migrate_postgres
from agen.store._pg_sql import to_pg
from agen.store.base import (
    LIVE_PAYLOAD_BYTES,
    Params,
    Row,
    Store,
    Tx,
    dumps,
    new_ulid,
    now_ms,
    settle_futures,
)
from agen.store.locate import redact_url
from agen.store.records import R, read, read_all
from agen.util.backoff import next_backoff

T = TypeVar("T")
log = logging.getLogger("agen.store")

CHANNEL = "agen_events"
WAKE_CHANNEL = "agen_work"
LIVE_CHANNEL = "agen_live"
LIVE_WANTED_CHANNEL = "agen_live_wanted"
LIVE_WANTED_S = 15.0
"""How long a Hub relays its live events after another Hub last said it has a follower for them
(``ask_for_live``, repeated while it has one): no follower elsewhere, no NOTIFY per batch of deltas."""
CONNECT_TIMEOUT_S = 10
MAX_RETRIES = 5  # serialization failures and deadlocks are retried this many times, then reported
SETTLE_POLL_S = (
    0.02  # how often followers look again while committed events wait for an older transaction
)
# Write functions waiting together run in one transaction, one COMMIT (group commit, as SQLite's writer
# does): at most this many. Each caller is answered only after that COMMIT.
MAX_BATCH = 64
# The NOTIFY that tells other processes events committed is sent at once after a quiet moment, then at
# most once per this interval (commits meanwhile ride on the next one): a NOTIFY is a transaction of its
# own that flushes the WAL under PostgreSQL's database-wide notification lock.
NOTIFY_INTERVAL_S = 0.02

_EVENT_COLUMNS = (
    "INSERT INTO events (id, namespace, type, severity, deployment, task_id, run_id, labels, data, dedupe_key,"
    " created_ms) VALUES "
)
_EVENT_SQL = to_pg(
    _EVENT_COLUMNS + "(?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL"
    " DO NOTHING RETURNING seq"
)
_RETRYABLE = (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected)
_Item = tuple[Callable[[Tx], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]
# Pooled connections are in autocommit mode and transactions are opened and closed by hand, so that BEGIN
# travels with the transaction's first statement (pipelined) and the events and NOTIFY with the COMMIT: no
# round trip of their own. No lock is taken here: writes lock the rows they change, and a decision that
# reads rows it does not change takes the key lock it needs (agen.store.pg_locks).
_BEGIN_WRITE = ("BEGIN",)
_BEGIN_READ = ("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",)
# The newest settled event (agen.store.event_log) and whether committed events still wait for an older
# transaction to end: followers are woken when the first moves, and look again while the second holds.
_HEAD_SQL = (
    "SELECT (SELECT seq FROM events WHERE xid < pg_snapshot_xmin(pg_current_snapshot())"
    " ORDER BY xid DESC, seq DESC LIMIT 1) AS seq,"
    " EXISTS (SELECT 1 FROM events WHERE xid >= pg_snapshot_xmin(pg_current_snapshot())) AS unsettled"
)


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

    An event without a dedupe key is kept until commit and appended then, in the round trip that commits
    (``commit``), or earlier when a statement of the transaction reads ``events`` or a dedupe-keyed
    event follows it (events keep their order within the transaction). ``event`` returns None for it (its
    seq is not known before it is appended); nothing in agen needs that seq. Order across transactions is
    not seq order but the event log's (agen.store.event_log): each row records its transaction id."""

    __slots__ = (
        "_begin",
        "_callbacks",
        "_conn",
        "_deferred",
        "_pending",
        "events_written",
        "now_ms",
        "row_lock",
    )
    dialect = "postgres"

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        *,
        begin: tuple[str, ...] = (),
        write: bool = False,
        follows: PostgresTx | None = None,
    ) -> None:
        self._conn = conn
        self.row_lock = " FOR UPDATE" if write else ""
        self._begin = begin  # sent ahead of the first statement, in the same round trip
        self.now_ms = now_ms()
        self.events_written = False
        self._callbacks: list[Callable[[], None]] = []
        self._pending: list[tuple[Any, ...]] = []
        # executemany's statements, sent ahead of the next statement or the COMMIT, in its round trip
        self._deferred: list[tuple[str, list[Any]]] = []
        if follows is not None:  # the next function of a batch, in the same transaction
            self._begin, self._pending = follows._begin, follows._pending
            self._deferred = follows._deferred
            self.events_written = follows.events_written

    def _cur(self, sql: str, params: Params) -> psycopg.Cursor[Any]:
        if self._pending and "events" in sql:  # a statement that may read this transaction's events
            self._append_pending()
        named = isinstance(params, Mapping)
        return self._send(to_pg(sql, named), params if named else tuple(params))

    def _send(self, query: str, params: Any = None) -> psycopg.Cursor[Any]:
        """Execute ``query``; BEGIN (before the transaction's first statement) and the deferred
        executemany statements go ahead of it in the same round trip (a pipeline)."""
        if not self._begin and not self._deferred:
            return self._conn.execute(query, params)
        with self._conn.pipeline():
            self._send_ahead()
            cur = self._conn.execute(query, params)
        return cur

    def _send_ahead(self) -> None:
        """Inside a pipeline: BEGIN if the transaction has not begun, then the deferred statements."""
        begin, self._begin = self._begin, ()
        for stmt in begin:
            self._conn.execute(stmt)
        deferred, self._deferred = self._deferred, []
        for query, items in deferred:
            with self._conn.cursor() as cur:
                cur.executemany(query, items)

    def execute(self, sql: str, params: Params = ()) -> int:
        return self._cur(sql, params).rowcount

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        items = list(rows)
        if not items:
            return
        if self._pending and "events" in sql:
            self._append_pending()
        named = isinstance(items[0], Mapping)
        self._deferred.append((to_pg(sql, named), items if named else [tuple(r) for r in items]))

    def one(self, sql: str, params: Params = ()) -> Row | None:
        row: Row | None = self._cur(sql, params).fetchone()
        return row

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        return list(self._cur(sql, params).fetchall())

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self._cur(sql, params).fetchone()
        return None if row is None else next(iter(row.values()))

    def row(self, row_type: type[R], sql: str, params: Params = ()) -> R | None:
        found = self.one(sql, params)
        return None if found is None else read(row_type, found)

    def rows(self, row_type: type[R], sql: str, params: Params = ()) -> list[R]:
        return read_all(row_type, self.all(sql, params))

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
        if dedupe_key is None:
            self._pending.append(values)
            return None
        self._append_pending()  # this event follows the ones before it
        row = self._send(_EVENT_SQL, values).fetchone()
        if row is None:
            return None
        self.events_written = True
        return int(row["seq"])

    def send_writes(self) -> None:
        """Send what waits for the next round trip (deferred statements, kept events) now."""
        if self._deferred or self._pending:
            with self._conn.pipeline():
                self._send_ahead()
                self._append_pending()

    def _append_pending(self) -> None:
        """Append the kept events now (a statement reads events, or a dedupe-keyed event follows them)."""
        if self._pending:
            self._send(self._insert_pending())

    def _insert_pending(self) -> str:
        rows = ",".join(
            "(" + ",".join(pgsql.Literal(v).as_string(self._conn) for v in values) + ")"
            for values in self._pending
        )
        self._pending = []
        self.events_written = True
        return _EVENT_COLUMNS + rows

    def commit(self) -> None:
        """End the transaction in one round trip: the deferred statements, the kept events and
        COMMIT. Nothing is sent when the transaction never began. No NOTIFY here: a transaction that
        notifies takes a database-wide lock from its COMMIT until its WAL flush ends (PostgreSQL
        serialises the notification queue that way), so every committer with a NOTIFY would flush one
        at a time; the store sends one after the commit instead, coalesced (``PostgresStore._notify``)."""
        if self._begin and not self._pending and not self._deferred:
            return
        if not self._deferred:  # one simple query: the events' literal rows, then COMMIT
            head = "".join(f"{stmt}; " for stmt in self._begin)
            self._begin = ()
            if self._pending:
                head += f"{self._insert_pending()}; "
            self._conn.execute(head + "COMMIT")
            return
        with self._conn.pipeline():
            self._send_ahead()
            if self._pending:
                self._conn.execute(self._insert_pending())
            self._conn.execute("COMMIT")

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

    dialect = "postgres"
    live_across_processes = True

    def __init__(self, url: str, *, pool_size: int = 4) -> None:
        self._connect_url = url
        self.url = self._where = redact_url(url)
        self._id = (
            new_ulid()
        )  # this process's wake-ups carry it, so its own listener passes them over
        self._woken: list[Callable[[], None]] = []
        self._live: list[Callable[[str], None]] = []  # on_live: who follows other Hubs' events
        self._live_wanted_until = 0.0  # monotonic: another Hub has a follower of live events
        self._live_seq = itertools.count()
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
        self._latest_seq = 0  # the head: the newest settled event (agen.store.event_log)
        self._head_stale = False
        self._header: asyncio.Task[None] | None = None
        self._waiting = 0  # wait_for_events calls now: only then is the head read on each commit
        self._seq_changed: asyncio.Event | None = None
        self._commits = 0  # events committed here or heard of (NOTIFY) so far: wait_for_change
        self._committed_now: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener: asyncio.Task[None] | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._queue: collections.deque[_Item] = collections.deque()  # writes waiting for a thread
        self._drainers = 0  # threads taking batches off the queue now
        self._max_drainers = max(2, pool_size)
        self._notify_at = 0.0  # loop time the last NOTIFY was sent
        self._notify_due: set[str] = set()  # channels the next NOTIFY tells
        self._notify_timer: asyncio.TimerHandle | None = None

    @classmethod
    async def open(cls, url: str, **kwargs: Any) -> PostgresStore:
        """Connect, migrate, and start listening for committed events."""
        store = cls(url, **kwargs)
        store._loop = asyncio.get_running_loop()
        store._seq_changed = asyncio.Event()
        store._committed_now = asyncio.Event()
        try:
            await store._in_thread(store._open_sync)
        except BaseException:
            await store.close()
            raise
        store._latest_seq = int(await store.scalar(event_log.head_sql("postgres")) or 0)
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
        """NOTIFY the other processes on this database that work became leasable: on the coalesced
        notification (``_notify``), so a stream of submits costs one NOTIFY per interval, not one each."""
        self._notify(WAKE_CHANNEL)

    def on_woken(self, callback: Callable[[], None]) -> None:
        self._woken.append(callback)

    def send_live(self, payloads: list[str]) -> None:
        """One NOTIFY statement on ``agen_live`` carrying every payload (best effort, off the loop); a
        payload past LIVE_PAYLOAD_BYTES is not sent (the caller splits: agen.hub.rpc.live)."""
        if self._closed or not payloads:
            return
        fit = [p for p in payloads if len(p.encode()) <= LIVE_PAYLOAD_BYTES]
        if len(fit) < len(payloads):
            log.warning(
                "store %s: %d live payloads over %d bytes not sent",
                self._where,
                len(payloads) - len(fit),
                LIVE_PAYLOAD_BYTES,
            )
        if not fit:
            return
        query = "SELECT " + ", ".join("pg_notify(%s, %s)" for _ in fit)
        # Postgres delivers identical payloads of one transaction once: a running number keeps
        # them apart (a long delta is split into pieces that may be alike)
        params = [x for p in fit for x in (LIVE_CHANNEL, f"{self._id} {next(self._live_seq)} {p}")]

        def send() -> None:
            try:
                with self._pool.connection() as conn:
                    conn.execute(query, params)
            except Exception as e:  # live events are best effort: the record is the checkpoint
                log.warning(
                    "store %s: could not send live events to the other Hubs (%s)", self._where, e
                )

        with contextlib.suppress(RuntimeError):  # shut down meanwhile
            self._threads.submit(send)

    def live_wanted(self) -> bool:
        """Whether a Hub of another process said lately that it has a follower of live events."""
        return time.monotonic() < self._live_wanted_until

    def ask_for_live(self) -> None:
        """Tell the other Hubs this one has a follower of live events, so they relay theirs for the
        next LIVE_WANTED_S (best effort, off the loop)."""
        if self._closed:
            return

        def send() -> None:
            # best effort: this Hub's follower still gets its own Hub's events
            with contextlib.suppress(Exception), self._pool.connection() as conn:
                conn.execute("SELECT pg_notify(%s, %s)", (LIVE_WANTED_CHANNEL, self._id))

        with contextlib.suppress(RuntimeError):  # shut down meanwhile
            self._threads.submit(send)

    def on_live(self, callback: Callable[[str], None]) -> None:
        """The first follower makes the listener LISTEN on ``agen_live`` (and on who asks for live
        events: ``live_wanted``) too (it connects again)."""
        self._live.append(callback)
        old = self._listener
        if len(self._live) > 1 or old is None or self._closed:
            return
        old.cancel()

        async def listen_again() -> None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await old  # its connection closed first
            await self._listen(asyncio.Event())

        self._listener = asyncio.create_task(listen_again(), name="agen-pg-listen")

    def _live_from_another(self, payload: str) -> None:
        parts = payload.split(" ", 2)
        if len(parts) != 3 or parts[0] == self._id:  # this process's own: its bus had them first
            return
        body = parts[2]
        for cb in list(self._live):
            try:
                cb(body)
            except Exception:
                log.exception("store %s: a live-event callback failed", self._where)

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
        if self._notify_timer is not None:
            self._notify_timer.cancel()
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
        if self._header is not None:
            self._header.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._header
        await asyncio.to_thread(self._threads.shutdown)
        await asyncio.to_thread(self._pool.close)

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._threads, fn)

    # -- writes ----------------------------------------------------------------------------

    async def write(self, fn: Callable[[Tx], T]) -> T:
        """Queue ``fn``; a store thread runs it with the writes queued beside it in one transaction (one
        COMMIT for all, group commit) and answers each caller once that COMMIT returned. With fewer writes
        in flight than connections each runs alone, at once."""
        if self._closed:
            raise UnavailableError("the store is closed", store=self._where)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._queue.append((fn, loop, fut))
            start = self._drainers < self._max_drainers
            if start:
                self._drainers += 1
        if start:
            self._next_batch()
        return await fut

    def _next_batch(self) -> None:
        try:
            self._threads.submit(self._drain)
        except RuntimeError:  # shut down: nothing runs the writes still queued
            with self._lock:
                left, self._drainers = list(self._queue), 0
                self._queue.clear()
            err = UnavailableError("the store is closed", store=self._where)
            _resolve(left, [(None, err)] * len(left))

    def _drain(self) -> None:
        """Run one batch of the queued writes, then make way: the next batch is submitted behind the
        reads that are waiting for a thread, so a steady stream of writes never starves them."""
        with self._lock:
            batch = [self._queue.popleft() for _ in range(min(len(self._queue), MAX_BATCH))]
            if not batch:
                self._drainers -= 1
                return
        try:
            results = self._run_batch(batch)
        except BaseException as e:  # a bug of ours: fail this batch, keep serving the next ones
            log.exception("store %s: a write batch failed unexpectedly", self._where)
            results = [(None, map_error(e, self._where))] * len(batch)
        _resolve(batch, results)
        with self._lock:
            if not self._queue:
                self._drainers -= 1
                return
        self._next_batch()

    def _run_batch(self, batch: list[_Item]) -> list[tuple[Any, BaseException | None]]:
        """One transaction for the batch; if a function in it raises (or the transaction must be retried),
        nothing of it is kept and each function runs again alone, so each caller gets its own result."""
        if len(batch) > 1:
            try:
                return [(value, None) for value in self._write_many([fn for fn, _, _ in batch])]
            except (
                psycopg.OperationalError
            ) as e:  # the connection failed: whether COMMIT ran is unknown
                err = map_error(e, self._where)
                return [(None, err)] * len(batch)
            except _Alone:
                pass
        out: list[tuple[Any, BaseException | None]] = []
        for fn, _, _ in batch:
            try:
                out.append((self.write_sync(fn), None))
            except BaseException as e:
                out.append((None, e))
        return out

    def _write_many(self, fns: list[Callable[[Tx], Any]]) -> list[Any]:
        """The functions back to back in one transaction, no savepoints (two round trips fewer each);
        ``_Alone`` when one of them raised before COMMIT."""
        values: list[Any] = []
        callbacks: list[Callable[[], None]] = []
        with self._pool.connection() as conn:
            tx: PostgresTx | None = None
            try:
                for fn in fns:
                    tx = PostgresTx(conn, begin=_BEGIN_WRITE, write=True, follows=tx)
                    values.append(fn(tx))
                    callbacks.extend(tx._callbacks)
                assert tx is not None
            except BaseException as e:
                _end_transaction(conn)
                if _lost(e):
                    raise
                raise _Alone from e
            try:
                tx.commit()
            except psycopg.Error as e:  # PostgreSQL rolled it back: each runs again alone
                if _lost(e):
                    raise
                _end_transaction(conn)
                raise _Alone from e
        self._committed(callbacks, tx.events_written)
        return values

    def write_sync(self, fn: Callable[[Tx], T]) -> T:
        for attempt in range(MAX_RETRIES + 1):
            try:
                return self._write_once(fn)
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

    def _write_once(self, fn: Callable[[Tx], T]) -> T:
        with self._pool.connection() as conn:
            tx = PostgresTx(conn, begin=_BEGIN_WRITE, write=True)
            try:
                value = fn(tx)
                tx.commit()
            except BaseException:
                _end_transaction(conn)
                raise
        self._committed(tx._callbacks, tx.events_written)
        return value

    def _committed(self, callbacks: list[Callable[[], None]], events: bool) -> None:
        for cb in callbacks:
            try:
                cb()
            except Exception:
                log.exception(
                    "store %s: an after-commit callback (%s) failed",
                    self._where,
                    getattr(cb, "__qualname__", repr(cb)),
                )
        if events and self._loop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._events_written)

    def _events_written(self) -> None:
        """Events of this process committed: its own followers look now, the other processes' once the
        coalesced NOTIFY reaches them."""
        self._events_committed()
        self._notify(CHANNEL)

    def _notify(self, channel: str) -> None:
        """Tell the other processes on ``channel`` (on this loop): at once after a quiet moment, then at
        most once per NOTIFY_INTERVAL_S, every channel due in one statement. A NOTIFY is a transaction
        of its own that flushes the WAL under PostgreSQL's database-wide notification lock, and holds a
        pooled connection meanwhile: one per submit or per commit would take a flush each."""
        if self._closed:
            return
        self._notify_due.add(channel)
        if self._notify_timer is not None:
            return  # one is due: this one rides on it
        assert self._loop is not None
        wait = self._notify_at + NOTIFY_INTERVAL_S - self._loop.time()
        if wait <= 0:
            self._send_notify()
        else:
            self._notify_timer = self._loop.call_later(wait, self._send_notify)

    def _send_notify(self) -> None:
        assert self._loop is not None
        self._notify_timer = None
        self._notify_at = self._loop.time()
        channels, self._notify_due = sorted(self._notify_due), set()
        query = "SELECT " + ", ".join("pg_notify(%s, %s)" for _ in channels)
        params = [x for channel in channels for x in (channel, self._id)]

        def send() -> None:
            try:
                with self._pool.connection() as conn:
                    conn.execute(query, params)
            except Exception as e:  # the others find the events and the work at their next look
                log.warning("store %s: could not notify the other Hubs (%s)", self._where, e)

        with contextlib.suppress(RuntimeError):  # shut down meanwhile
            self._threads.submit(send)

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
                    tx = PostgresTx(conn, begin=_BEGIN_READ)
                    value = fn(tx)
                    tx.send_writes()  # a write in a read: refused here by PostgreSQL, as any is
                    return value
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
        """LISTEN on a connection of its own: a NOTIFY on ``agen_events`` says a transaction with events
        committed (the head is read again), one on ``agen_work`` wakes this process's Hub, one on
        ``agen_live`` (once a follower asked: ``on_live``) carries another Hub's live events."""
        while not self._closed:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._connect_url, autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    await conn.execute(f"LISTEN {WAKE_CHANNEL}")
                    if self._live:
                        await conn.execute(f"LISTEN {LIVE_CHANNEL}")
                        await conn.execute(f"LISTEN {LIVE_WANTED_CHANNEL}")
                    self._events_committed()  # commits made while (re)connecting were not heard
                    ready.set()
                    self._wake_local()  # work submitted while (re)connecting was not heard either
                    async for note in conn.notifies():
                        if note.channel == LIVE_CHANNEL:
                            self._live_from_another(note.payload)
                            continue
                        if note.channel == LIVE_WANTED_CHANNEL:
                            if note.payload != self._id:
                                self._live_wanted_until = time.monotonic() + LIVE_WANTED_S
                            continue
                        if note.payload == self._id:  # this process's own: it knew already
                            continue
                        if note.channel == WAKE_CHANNEL:
                            self._wake_local()
                            continue
                        self._events_committed()
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

    def _events_committed(self) -> None:
        """The head moved: read it again soon if anyone waits for events, else when someone does. NOTIFYs
        that arrive meanwhile ride on the same read (coalesced), so a process nobody follows events in
        reads nothing per commit. Whoever waits for any change (``wait_for_change``) is woken now."""
        self._head_stale = True
        if self._waiting:
            self._start_following()
        self._commits += 1
        if self._committed_now is not None:
            self._committed_now.set()
            self._committed_now = asyncio.Event()

    def _start_following(self) -> None:
        if self._header is None or self._header.done():
            self._header = asyncio.create_task(self._follow_head(), name="agen-pg-head")

    async def _follow_head(self) -> None:
        """Move the head to the newest settled event; while committed events wait for an older
        transaction to end (it sends no NOTIFY if it wrote no events), look again, backing off."""
        pause = SETTLE_POLL_S
        while not self._closed:
            self._head_stale = False
            try:
                row = await self._in_thread(self._read_head)
            except Exception as e:
                log.warning("store %s: cannot read the event head (%s)", self._where, e)
                row = None
            if row is not None:
                if row["seq"] is not None:
                    self._note_seq(int(row["seq"]))
                if not row["unsettled"] and not self._head_stale:
                    return
            if not self._waiting:  # nobody follows now: the next wait reads it again
                self._head_stale = True
                return
            if not self._head_stale:
                await asyncio.sleep(pause)
                pause = next_backoff(pause, SETTLE_POLL_S, 1.0)

    def _read_head(self) -> Row | None:
        with self._pool.connection() as conn:
            row: Row | None = conn.execute(_HEAD_SQL).fetchone()
            return row

    def _note_seq(self, seq: int) -> None:
        if seq != self._latest_seq:
            self._latest_seq = seq
            if self._seq_changed is not None:
                self._seq_changed.set()
                self._seq_changed = asyncio.Event()

    async def wait_for_events(self, after_seq: int, timeout_s: float) -> int:
        """Wait until an event after ``after_seq`` in the log's order (agen.store.event_log) is settled, or
        ``timeout_s`` passes; returns the head (the newest settled event's seq)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout_s)
        self._waiting += 1
        try:
            if self._head_stale:  # commits were heard while nobody waited: the head is read now
                self._start_following()
            while True:
                head = self._latest_seq
                if head != after_seq and await self._follows(head, after_seq):
                    return head
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return self._latest_seq
                ev = self._seq_changed
                assert ev is not None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ev.wait(), timeout=remaining)
        finally:
            self._waiting -= 1

    async def wait_for_change(self, seen: int, timeout_s: float) -> int:
        """Counted from this process's own commits with events (at once, no read) and from the other
        processes' NOTIFYs."""
        if seen != self._commits or seen < 0:
            return self._commits
        ev = self._committed_now
        assert ev is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ev.wait(), timeout=max(0.0, timeout_s))
        return self._commits

    async def _follows(self, head: int, after: int) -> bool:
        """Whether event ``head`` comes after cursor ``after`` in the log's order."""
        if head <= 0:
            return False
        if after <= 0:
            return True
        cond, params = event_log.after("postgres", after)
        found = await self.scalar(f"SELECT 1 FROM events WHERE seq = ? AND {cond}", (head, *params))
        return found is not None


def _lost(e: BaseException) -> bool:
    """The connection failed (whether a COMMIT ran is unknown), as opposed to a deadlock or a
    serialization failure, which PostgreSQL rolled back and which run again (psycopg files both under
    OperationalError)."""
    return isinstance(e, psycopg.OperationalError) and not isinstance(e, _RETRYABLE)


class _Alone(Exception):
    """A batch's transaction was rolled back before it committed: its functions run again one by one."""


def _resolve(batch: list[_Item], results: list[tuple[Any, BaseException | None]]) -> None:
    """Answer each caller on its own loop, one wake-up per loop for the whole batch."""
    by_loop: dict[
        asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any, BaseException | None]]
    ] = {}
    for (_fn, loop, fut), (value, exc) in zip(batch, results, strict=True):
        by_loop.setdefault(loop, []).append((fut, value, exc))
    for loop, items in by_loop.items():
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(settle_futures, items)
