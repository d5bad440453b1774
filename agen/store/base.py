"""The Store port: whole transactions on one writer, reads on their own connections.

A write is a plain function ``fn(tx) -> T`` run inside a transaction on the
writer; the adapter may run several waiting transactions under one commit
(group commit), so one failing function only rolls back its own statements:
a group runs optimistically with no savepoints, and when one of its functions
raises, the group is rolled back and re-run with a savepoint around each one.
A function may therefore run more than once before it commits: it must keep its
effects inside ``tx`` (``tx.after_commit`` for anything else). Domain code (tasks, runs, ...) is written as
such functions, which keeps it independent of the engine.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import contextlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic_core import to_json

from agen.store.records import R, read, read_all
from agen.util.ulid import new_ulid as new_ulid  # re-exported: the store makes the ids it writes

T = TypeVar("T")
Row = dict[str, Any]
Params = Sequence[Any] | Mapping[str, Any]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


LIVE_PAYLOAD_BYTES = 7_900
"""The largest payload ``Store.send_live`` carries: a Postgres NOTIFY takes under 8000 bytes, and the
sender's id and a running number (at most 48) ride in front."""


def _encode(value: Any) -> str:
    """Compact JSON, key order kept, non-ASCII as is, NaN and infinities as JSON's constants, unknown
    types by ``str``: pydantic-core's encoder, about twice as fast as a ``json.JSONEncoder`` (which
    builds a new C encoder on every call; JSON encoding was ~9 % of the Store writer's GIL time in
    py-spy samples of the task pipeline). It writes the same text as ``json`` for agen's values
    (str, int, float, bool, None, lists, dicts, str enums); datetimes it writes in ISO form."""
    return to_json(value, fallback=str, inf_nan_mode="constants").decode()


def dumps(value: Any) -> str:
    """JSON for a column: compact, key order kept as given (one shared encoder: it is hot)."""
    if not value and isinstance(value, dict):
        return "{}"
    return _encode(value)


def loads(text: str | bytes | None, default: Any = None) -> Any:
    return default if text is None else json.loads(text)


class Tx(Protocol):
    """What a transaction function may do. Only valid while the function runs."""

    now_ms: int
    dialect: str  # "sqlite" or "postgres": for the few statements the engines spell differently
    row_lock: str
    """Appended to a SELECT whose rows the transaction decides from and then changes: " FOR UPDATE" in a
    Postgres write, where writers run side by side (a concurrent change waits, or is seen first); "" on
    SQLite, whose one writer decides alone, and in reads."""

    def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; returns the number of rows changed."""

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one statement per row, for writes whose counts nobody needs (a step's messages, spans,
        usage). On Postgres they travel with the transaction's next round trip (its next statement
        or its COMMIT, pipelined), so an error in them is raised there."""

    def one(self, sql: str, params: Params = ()) -> Row | None: ...

    def all(self, sql: str, params: Params = ()) -> list[Row]: ...

    def scalar(self, sql: str, params: Params = ()) -> Any: ...

    def row(self, row_type: type[R], sql: str, params: Params = ()) -> R | None:
        """The first row of a SELECT as ``row_type`` (agen.store.records), or None."""

    def rows(self, row_type: type[R], sql: str, params: Params = ()) -> list[R]:
        """Every row of a SELECT as ``row_type`` (agen.store.records)."""

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
        """Append an event in this transaction; returns its seq (None if the dedupe key was used, or on
        Postgres for an event without a dedupe key, appended with the commit: agen.store.postgres).

        ``labels`` may be the JSON text already stored on a task or run row (not decoded again)."""

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the writer thread once this transaction has committed."""


@dataclass(frozen=True)
class StoreHealth:
    """Whether the store takes writes now: ``/health`` shows it, so a full disk is not reported as ``ok``."""

    ok: bool = True
    error: str | None = None
    since_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok}
        if not self.ok:
            out["error"] = self.error
            out["since_ms"] = self.since_ms
        return out


class Store(abc.ABC):
    """Port implemented by SQLite (local, one Hub) and Postgres (several Hubs may share one database)."""

    url: str  # as it may be shown: never holds a password
    dialect: str = "sqlite"  # as Tx.dialect: how the event log is read (agen.store.event_log)

    @property
    def connect_url(self) -> str:
        """The URL another process opens this store with (``agen host serve``); may hold a password, so it
        is passed in a child's environment, never printed."""
        return self.url

    def wake_others(self) -> None:
        """Tell the Hubs of *other* processes on this store that work may be waiting (a task became
        leasable, desired state changed). A SQLite store has one Hub process (agen.ownership), so there is
        nobody to tell; the Postgres adapter sends a NOTIFY."""
        return

    def on_woken(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` on this process's event loop whenever another process calls ``wake_others``
        on the same store (never for this process's own calls: those wake it directly). Stores only one
        process serves never call it."""
        return

    live_across_processes = False
    """Hubs of other processes may share this store and follow one another's live events
    (agen.hub.rpc.live): Postgres. A SQLite store has one Hub process."""

    def send_live(self, payloads: list[str]) -> None:
        """Hand live events (text, each at most LIVE_PAYLOAD_BYTES of UTF-8) to the Hubs of other
        processes on this store, best effort: a NOTIFY on Postgres. SQLite: nobody to tell."""
        return

    def live_wanted(self) -> bool:
        """Whether a Hub of another process has a follower of live events now (``ask_for_live``):
        only then are this process's sent to it."""
        return False

    def ask_for_live(self) -> None:
        """Tell the Hubs of other processes this one has a follower of live events."""
        return

    def on_live(self, callback: Callable[[str], None]) -> None:
        """Call ``callback`` on this process's event loop with each payload another process sent with
        ``send_live`` (never this process's own). Stores only one process serves never call it."""
        return

    @abc.abstractmethod
    async def write(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in a write transaction and return its result once committed."""

    @abc.abstractmethod
    def write_sync(self, fn: Callable[[Tx], T]) -> T:
        """Same as write, for code that is not on an event loop (CLI helpers, threads)."""

    async def read(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` over one committed snapshot, off the writer (``fn`` must not write). Adapters without
        a read path run it as a write."""
        return await self.write(fn)

    @abc.abstractmethod
    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        """Read rows from a committed snapshot (never blocks the writer)."""

    async def one(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.all(sql, params)
        return rows[0] if rows else None

    async def scalar(self, sql: str, params: Params = ()) -> Any:
        row = await self.one(sql, params)
        return None if row is None else next(iter(row.values()))

    async def row(self, row_type: type[R], sql: str, params: Params = ()) -> R | None:
        """The first row of a SELECT, read from a committed snapshot, as ``row_type``
        (agen.store.records), or None."""
        found = await self.one(sql, params)
        return None if found is None else read(row_type, found)

    async def rows(self, row_type: type[R], sql: str, params: Params = ()) -> list[R]:
        """Every row of a SELECT, read from a committed snapshot, as ``row_type``."""
        return read_all(row_type, await self.all(sql, params))

    @abc.abstractmethod
    async def wait_for_events(self, after_seq: int, timeout_s: float) -> int:
        """Wait until an event after cursor ``after_seq`` (agen.store.event_log) commits here (or timeout);
        returns the head, the newest event's cursor."""

    async def wait_for_change(self, seen: int, timeout_s: float) -> int:
        """Wait until events may have committed since ``seen`` (a value this returned; -1 returns the
        current one at once), or ``timeout_s`` passes. For a caller that reads what it waits for again
        anyway (GetTask): no order, no cursor, so it costs no read of its own where the adapter knows
        of commits without one (Postgres)."""
        return await self.wait_for_events(seen, timeout_s if seen >= 0 else 0)

    def health(self) -> StoreHealth:
        """The store's write health; adapters that cannot tell say ok."""
        return StoreHealth()

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    def schema_version(self) -> int: ...


def settle_futures(items: list[tuple[Any, Any, BaseException | None]]) -> None:
    """Answer the callers of a write batch (``(future, value, exception)`` each), on the future's own
    loop: a caller cancelled meanwhile, or a future settled already, is passed over."""
    for fut, value, exc in items:
        if fut.done():
            continue
        with contextlib.suppress(asyncio.InvalidStateError, concurrent.futures.InvalidStateError):
            if exc is None:
                fut.set_result(value)
            else:
                fut.set_exception(exc)
