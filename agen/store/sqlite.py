"""SQLite adapter: one writer thread with group commit, a small pool of read-only reader threads.

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
import logging
import queue
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agen.errors import AgenError, StoreError, UnavailableError
from agen.store._sqlite_errors import TransactionLost, is_fault, map_error
from agen.store._sqlite_tx import SQLiteTx, dict_row
from agen.store.base import Params, Row, Store, StoreHealth, Tx, now_ms, settle_futures
from agen.store.migrate import migrate_sqlite
from agen.util.home import prepare_store_file

T = TypeVar("T")
log = logging.getLogger("agen.store")

MAX_BATCH = 512
BUSY_TIMEOUT_MS = 10_000
# The writer's page cache (KiB; SQLite's default is 2 MiB): the hot task/event/run index pages stay in
# memory instead of being looked up in the WAL and read again on every statement.
CACHE_KIB = 65_536


def check_writable(path: Path) -> None:
    """Raise StoreError when this process cannot write the SQLite file at ``path`` (a read-only file,
    folder or mount). Opening a store agen used before writes nothing, so without this a long-running
    owner (`agen up`) learns it only at its first write, half started; a missing file is created (and
    checked) on open."""
    if not path.exists():
        return
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=5)
        try:  # rewriting the header's user_version is the smallest write there is
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            conn.execute(f"PRAGMA user_version = {version}")
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise StoreError(
            f"the store {path} cannot be written: {e}; make the file and its folder (for the -wal "
            "and -shm files) writable by this user, or use another --store",
            store=str(path),
        ) from None


def _configure(conn: sqlite3.Connection, synchronous: str) -> None:
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    # Statement and savepoint sub-journals in memory: on disk they cost ~130 pwrite64 per task.
    conn.execute("PRAGMA temp_store=MEMORY")


_Item = tuple[Callable[[Tx], Any], "asyncio.AbstractEventLoop | None", Any]
_Read = tuple[
    Callable[..., Any], tuple[Any, ...], "asyncio.AbstractEventLoop", "asyncio.Future[Any]"
]


class SQLiteStore(Store):
    """The local Store: a SQLite file in WAL mode."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "NORMAL",
        readers: int = 2,
        poll_s: float = 0.5,
        trace: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.url = f"sqlite:{self.path}"
        if synchronous.upper() not in ("NORMAL", "FULL", "OFF"):
            raise StoreError(f"synchronous must be NORMAL, FULL or OFF (got {synchronous!r})")
        self._synchronous = synchronous.upper()
        self._n_readers = max(1, readers)
        self._poll_s = poll_s  # how often wait_for_events looks for other processes' commits
        # Called on the writer thread with each statement it runs, parameters filled in (after migration):
        # how tests and benchmarks see exactly what a task writes.
        self._trace = trace
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._version = 0
        self._latest_seq = 0
        self._seq_changed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._read_queue: queue.SimpleQueue[_Read | None] = queue.SimpleQueue()
        self._read_threads: list[threading.Thread] = []
        # Why writes fail now (message, since_ms); the writer thread sets and clears it, /health reads it.
        self._fault: tuple[str, int] | None = None
        self._writer_stopped: str | None = None  # set once the writer thread has ended on an error
        self._gate = (
            threading.Lock()
        )  # orders "queue a write" against "the writer stopped, fail the queue"
        self._current: list[_Item] = []  # the batch the writer is running

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: str | Path, **kwargs: Any) -> SQLiteStore:
        """Open (creating if needed) and migrate the store, then start the writer."""
        store = cls(path, **kwargs)
        await asyncio.to_thread(store._start_writer)
        store._loop = asyncio.get_running_loop()
        store._seq_changed = asyncio.Event()
        store._latest_seq = int(await store.scalar("SELECT COALESCE(MAX(seq), 0) FROM events") or 0)
        return store

    @classmethod
    def open_sync(cls, path: str | Path, **kwargs: Any) -> SQLiteStore:
        """Open for synchronous use only (write_sync); async reads need open()."""
        store = cls(path, **kwargs)
        store._start_writer()
        return store

    def _start_writer(self) -> None:
        prepare_store_file(
            self.path
        )  # 0600 before SQLite writes a byte; looser modes are warned about
        ready: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._writer_main,
            args=(ready,),
            name=f"agen-store-writer:{self.path.name}",
            daemon=True,
        )
        self._thread.start()
        self._version = ready.result()

    def schema_version(self) -> int:
        return self._version

    async def close(self) -> None:
        if self._closed:
            return
        with self._gate:
            self._closed = True
            self._queue.put(None)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        for _ in self._read_threads:
            self._read_queue.put(None)
        for t in self._read_threads:
            await asyncio.to_thread(t.join)

    def close_sync(self) -> None:
        if self._closed:
            return
        with self._gate:
            self._closed = True
            self._queue.put(None)
        if self._thread is not None:
            self._thread.join()

    # -- writes ----------------------------------------------------------------------------

    async def write(self, fn: Callable[[Tx], T]) -> T:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._submit((fn, loop, fut))
        return await fut

    def write_sync(self, fn: Callable[[Tx], T]) -> T:
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._submit((fn, None, fut))
        return fut.result()

    def _submit(self, item: _Item) -> None:
        """Queue a write, or refuse it at once: a write queued to a stopped writer would wait for ever."""
        with self._gate:
            if self._closed:
                raise UnavailableError("the store is closed", store=self.url)
            if self._writer_stopped is not None:
                raise StoreError(self._writer_stopped, store=str(self.path))
            self._queue.put(item)

    def health(self) -> StoreHealth:
        fault = self._fault
        if fault is None:
            return StoreHealth()
        return StoreHealth(ok=False, error=fault[0], since_ms=fault[1])

    def _writer_main(self, ready: concurrent.futures.Future[int]) -> None:
        try:
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, cached_statements=512
            )
            _configure(conn, self._synchronous)
            version = migrate_sqlite(conn, str(self.path), now_ms())
        except AgenError as e:
            ready.set_exception(e)
            return
        except Exception as e:  # sqlite3.Error, OSError, ...: open() must fail, never wait for ever
            ready.set_exception(
                StoreError(f"cannot open the store {self.path}: {e}", store=str(self.path))
            )
            return
        if self._trace is not None:
            conn.set_trace_callback(self._trace)
        ready.set_result(version)
        try:
            self._writer_loop(conn)
        except BaseException as e:  # the thread ends here; every waiting caller must hear of it
            self._stop_writer(e)
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
            self._current = batch
            try:
                self._run_batch(conn, batch)
            except Exception as e:  # a bug of ours: fail this batch, keep serving the next ones
                log.exception("store %s: a write batch failed unexpectedly", self.path)
                self._abandon(conn)
                self._resolve(batch, [(None, self._batch_error(e))] * len(batch))
            self._current = []
            if stop:
                return

    def _stop_writer(self, e: BaseException) -> None:
        """The writer thread is ending on an error: fail its batch and everything queued, refuse new writes."""
        msg = (
            f"the store {self.path} stopped taking writes after an internal error ({type(e).__name__}: {e}); "
            "restart agen"
        )
        log.critical("store %s: the writer stopped: %s: %s", self.path, type(e).__name__, e)
        with self._gate:
            self._writer_stopped = msg
            self._fault = (msg, now_ms())
            pending = list(self._current)
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    pending.append(item)
        err = StoreError(msg, store=str(self.path))
        self._resolve(pending, [(None, err)] * len(pending))

    def _run_batch(self, conn: sqlite3.Connection, batch: list[_Item]) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            self._note_fault(f"cannot start a write transaction: {e}")
            err: AgenError = UnavailableError(
                f"the store {self.path} is busy or unwritable: {e}; retry", store=str(self.path)
            )
            self._resolve(batch, [(None, err)] * len(batch))
            return
        changes = conn.total_changes
        try:
            results, callbacks, max_seq = self._run_functions(conn, batch)
            if conn.in_transaction:  # a lone function that failed was rolled back already
                conn.execute("COMMIT")
        except Exception as e:  # SQLite ended the transaction, or BEGIN/SAVEPOINT/COMMIT failed
            self._abandon(conn)
            if not isinstance(e, TransactionLost) or is_fault(
                e.__cause__
            ):  # a function's own ROLLBACK is not
                self._note_fault(str(e.__cause__ or e))
            self._resolve(batch, [(None, self._batch_error(e))] * len(batch))
            return
        if conn.total_changes > changes:
            self._note_ok()
        try:
            self._after_commit(callbacks)
        finally:  # a callback that ends the thread must not leave committed callers waiting
            if max_seq and self._loop is not None:
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._note_seq, max_seq)
            self._resolve(batch, results)

    def _run_functions(
        self, conn: sqlite3.Connection, batch: list[_Item]
    ) -> tuple[list[tuple[Any, BaseException | None]], list[Callable[[], None]], int]:
        """Run the batch in the open transaction: optimistically first, all functions back to back with no
        savepoint (two statements fewer per function, and no sub-journal); if one of them raises, the whole
        transaction is rolled back and the batch re-run with a savepoint around each function, so the
        failing one rolls back alone and the others still commit."""
        if len(batch) == 1:
            return self._run_isolated(conn, batch)
        results: list[tuple[Any, BaseException | None]] = []
        callbacks: list[Callable[[], None]] = []
        max_seq = 0
        for fn, _loop, _fut in batch:
            tx = SQLiteTx(conn)
            try:
                value = fn(tx)
            except BaseException as e:
                if not conn.in_transaction:  # SQLite rolled back everything (disk full), or fn did
                    raise TransactionLost(str(e)) from e
                conn.execute("ROLLBACK")
                conn.execute("BEGIN IMMEDIATE")
                return self._run_isolated(conn, batch)
            if not conn.in_transaction:
                raise TransactionLost(
                    "a transaction function ended the transaction itself (COMMIT or ROLLBACK)"
                )
            results.append((value, None))
            callbacks.extend(tx._callbacks)
            max_seq = max(max_seq, tx.max_event_seq)
        return results, callbacks, max_seq

    def _run_isolated(
        self, conn: sqlite3.Connection, batch: list[_Item]
    ) -> tuple[list[tuple[Any, BaseException | None]], list[Callable[[], None]], int]:
        """Run each function in the open transaction (a savepoint each when several share it)."""
        results: list[tuple[Any, BaseException | None]] = []
        callbacks: list[Callable[[], None]] = []
        max_seq = 0
        single = len(batch) == 1
        for fn, _loop, _fut in batch:
            tx = SQLiteTx(conn)
            if not single:
                conn.execute("SAVEPOINT t")
            try:
                value = fn(tx)
            except BaseException as e:  # the caller gets its own exception back
                if not conn.in_transaction:  # SQLite rolled back everything (disk full), or fn did
                    raise TransactionLost(str(e)) from e
                if single:
                    conn.execute("ROLLBACK")
                else:
                    conn.execute("ROLLBACK TO t")
                    conn.execute("RELEASE t")
                if is_fault(e):
                    self._note_fault(str(e))
                results.append((None, map_error(e, self.path)))
                continue
            if not conn.in_transaction:
                raise TransactionLost(
                    "a transaction function ended the transaction itself (COMMIT or ROLLBACK)"
                )
            if not single:
                conn.execute("RELEASE t")
            results.append((value, None))
            callbacks.extend(tx._callbacks)
            max_seq = max(max_seq, tx.max_event_seq)
        return results, callbacks, max_seq

    def _after_commit(self, callbacks: list[Callable[[], None]]) -> None:
        for cb in callbacks:
            try:
                cb()
            except (
                Exception
            ):  # the write is committed; the callback's failure is ours to report, not the caller's
                log.exception(
                    "store %s: an after-commit callback (%s) failed",
                    self.path,
                    getattr(cb, "__qualname__", repr(cb)),
                )

    def _abandon(self, conn: sqlite3.Connection) -> None:
        """Leave no transaction open after a failure (SQLite may have rolled back already)."""
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error as e:
                log.warning("store %s: rollback after a failed write also failed: %s", self.path, e)

    def _batch_error(self, e: BaseException) -> StoreError:
        if isinstance(e, TransactionLost):
            why = f"SQLite rolled the transaction back ({e})"
        else:
            why = f"{type(e).__name__}: {e}" if not isinstance(e, sqlite3.Error) else str(e)
        return StoreError(
            f"write failed on {self.path}: {why}; nothing in this batch was saved. Retry; if it "
            "keeps failing, check free disk space and that the store file is writable",
            store=str(self.path),
        )

    def _note_fault(self, error: str) -> None:
        if self._fault is None:
            log.error(
                "store %s cannot be written: %s (logged once; another line when it clears)",
                self.path,
                error,
            )
            self._fault = (f"cannot write: {error}", now_ms())

    def _note_ok(self) -> None:
        if self._fault is not None and self._writer_stopped is None:
            log.warning(
                "store %s takes writes again (the fault since %d ms cleared)",
                self.path,
                self._fault[1],
            )
            self._fault = None

    @staticmethod
    def _resolve(batch: list[_Item], results: list[tuple[Any, BaseException | None]]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Any, Any, BaseException | None]]] = {}
        for (_fn, loop, fut), (value, exc) in zip(batch, results, strict=True):
            if loop is None:
                settle_futures([(fut, value, exc)])
            else:
                by_loop.setdefault(loop, []).append((fut, value, exc))
        for loop, items in by_loop.items():
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(settle_futures, items)

    def _note_seq(self, seq: int) -> None:
        if seq > self._latest_seq:
            self._latest_seq = seq
            if self._seq_changed is not None:
                self._seq_changed.set()
                self._seq_changed = asyncio.Event()

    # -- reads -----------------------------------------------------------------------------

    # One read path (docs/architecture.md, agen/store/): every read runs on a read-only sqlite3
    # connection owned by one of a few reader threads, fed by one queue and answered the way the
    # writer answers (call_soon_threadsafe), which measured as fast as aiosqlite for one statement
    # and, unlike it, gives a read function one snapshot for all its statements. A single statement
    # is its own snapshot, so all()/one()/scalar() skip BEGIN/COMMIT.

    async def read(self, fn: Callable[[Tx], T]) -> T:
        """``fn`` over one snapshot: reads that need several statements (a task with its details)
        see one state of the database and keep the writer free."""
        return await self._on_reader(self._read, fn)

    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        return await self._on_reader(self._all, sql, params)

    async def _on_reader(self, call: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise UnavailableError("the store is closed", store=self.url)
        if not self._read_threads:
            self._read_threads = [
                threading.Thread(
                    target=self._reader_main, name=f"agen-read:{self.path.name}", daemon=True
                )
                for _ in range(self._n_readers)
            ]
            for t in self._read_threads:
                t.start()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._read_queue.put((call, args, loop, fut))
        return await fut

    def _reader_main(self) -> None:
        """One reader thread: its own read-only connection; results go back as the writer's do."""
        uri = "file:" + urllib.parse.quote(str(self.path.resolve())) + "?mode=ro"  # spaces, ?, #, %
        conn: sqlite3.Connection | None = None
        try:
            while (item := self._read_queue.get()) is not None:
                call, args, loop, fut = item
                value: Any = None
                exc: BaseException | None = None
                try:
                    if conn is None:
                        conn = sqlite3.connect(
                            uri,
                            uri=True,
                            isolation_level=None,
                            check_same_thread=False,
                            cached_statements=256,
                        )
                        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                        conn.execute(f"PRAGMA cache_size=-{CACHE_KIB // 4}")
                    value = call(conn, *args)
                except BaseException as e:  # handed to the caller, never kills the thread
                    exc = e
                with contextlib.suppress(RuntimeError):  # loop already closed
                    loop.call_soon_threadsafe(settle_futures, [(fut, value, exc)])
        finally:
            if conn is not None:
                conn.close()

    def _read(self, conn: sqlite3.Connection, fn: Callable[[Tx], T]) -> T:
        try:
            conn.execute("BEGIN")
            try:
                return fn(SQLiteTx(conn))
            finally:
                conn.execute("COMMIT")
        except BaseException as e:
            raise map_error(e, self.path) from None

    def _all(self, conn: sqlite3.Connection, sql: str, params: Params) -> list[Row]:
        try:
            cur = conn.execute(sql, params)
            return [dict_row(cur, r) for r in cur.fetchall()]
        except sqlite3.Error as e:
            raise StoreError(f"read failed on {self.path}: {e}", store=str(self.path)) from e

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
                await asyncio.wait_for(ev.wait(), timeout=min(remaining, self._poll_s))
            seq = int(await self.scalar("SELECT COALESCE(MAX(seq), 0) FROM events") or 0)
            if seq > self._latest_seq:
                self._note_seq(seq)
