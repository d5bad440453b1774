"""The event log (seed 000 §11): ListEvents after a cursor with filters and an optional wait,
retention pruning, and the filter shared with notification targets and event triggers.

A cursor is the seq of the last event a reader examined; "after it" is the log's order
(agen.store.event_log: seq order on SQLite's one writer, settled transactions in (xid, seq) order on
Postgres), so a reader that resumes after it neither loses nor repeats an event, across Hub restarts too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agen.errors import InvalidError
from agen.store import Store, Tx, event_log, loads

RETENTION_MS = 7 * 86_400_000
SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}
MAX_LIMIT = 1000
_BATCH = 500


def type_matches(event_type: str, patterns: Sequence[str]) -> bool:
    """Exact type, or a prefix ending in "." ("task." matches every task event); [] matches all."""
    if not patterns:
        return True
    for p in patterns:
        if p == "*" or event_type == p or (p.endswith(".") and event_type.startswith(p)):
            return True
        if p.endswith(".*") and event_type.startswith(p[:-1]):
            return True
    return False


class EventRow(NamedTuple):
    """One row of ``events`` as readers see it (``agen.store.event_log.COLUMNS``, in its order)."""

    seq: int
    id: str
    namespace: str
    type: str
    severity: str
    deployment: str | None
    task_id: str | None
    run_id: str | None
    labels: str  # JSON text
    data: str  # JSON text
    dedupe_key: str | None
    created_ms: int


@dataclass(frozen=True)
class EventFilter:
    """Filters shared by ListEvents, notification targets and event triggers."""

    types: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    deployment: str | None = None
    severity: str | None = None
    task_id: str | None = None  # one task's events (its runs' live events too)

    def __post_init__(self) -> None:
        if self.severity is not None and self.severity not in SEVERITY_RANK:
            raise InvalidError(
                f"severity must be info, warning or critical (got {self.severity!r})",
                field="severity",
            )

    def sql(self) -> tuple[str, list[Any]]:
        """The part SQL can do cheaply (deployment, severity); types and labels are checked in Python."""
        where: list[str] = []
        params: list[Any] = []
        if self.deployment:
            where.append("deployment = ?")
            params.append(self.deployment)
        if self.task_id:
            where.append("task_id = ?")
            params.append(self.task_id)
        if self.severity and self.severity != "info":
            allowed = [s for s, r in SEVERITY_RANK.items() if r >= SEVERITY_RANK[self.severity]]
            where.append(f"severity IN ({','.join('?' * len(allowed))})")
            params.extend(allowed)
        exact = [t for t in self.types if not t.endswith(".") and not t.endswith("*")]
        if self.types and len(exact) == len(self.types):
            where.append(f"type IN ({','.join('?' * len(exact))})")
            params.extend(exact)
        return " AND ".join(where), params

    def matches(self, event: EventRow | Mapping[str, Any]) -> bool:
        """Does the event pass: a stored one (``EventRow``) or one as the API sends it (a live
        event's dict, labels decoded)?"""
        if isinstance(event, EventRow):
            return self._passes(
                event.type, event.severity, event.deployment, event.task_id, event.labels
            )
        return self._passes(
            str(event["type"]),
            event.get("severity"),
            event.get("deployment"),
            event.get("task_id"),
            event.get("labels"),
        )

    def _passes(
        self,
        type: str,
        severity: Any,
        deployment: str | None,
        task_id: str | None,
        labels: Any,
    ) -> bool:
        if self.deployment and deployment != self.deployment:
            return False
        if self.task_id and task_id != self.task_id:
            return False
        if self.severity and SEVERITY_RANK.get(str(severity), 0) < SEVERITY_RANK[self.severity]:
            return False
        if not type_matches(type, self.types):
            return False
        if self.labels:
            have = loads(labels, {}) if isinstance(labels, str | bytes) else dict(labels or {})
            if any(have.get(k) != v for k, v in self.labels.items()):
                return False
        return True


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    """``k=v`` flags into a dict; InvalidError names the bad one."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise InvalidError(
                f"label {item!r} is not key=value (for example --label team=ops)", field="label"
            )
        out[key] = value
    return out


def decode(row: EventRow) -> dict[str, Any]:
    """An events row as the API returns it (labels and data decoded)."""
    out = row._asdict()
    out["labels"] = loads(row.labels, {})
    out["data"] = loads(row.data, {})
    return out


def _query(
    dialect: str,
    namespaces: Sequence[str],
    after: int,
    top: int,
    flt: EventFilter,
    batch: int,
) -> tuple[str, list[Any]]:
    since, params = event_log.after(dialect, after)
    until, more = event_log.upto(dialect, top)
    sql = f"SELECT {event_log.COLUMNS} FROM events WHERE {since} AND {until}"
    params = [*params, *more]
    if namespaces:
        sql += f" AND namespace IN ({','.join('?' * len(namespaces))})"
        params.extend(namespaces)
    extra, more = flt.sql()
    if extra:
        sql += " AND " + extra
        params.extend(more)
    return sql + f" ORDER BY {event_log.order(dialect)} LIMIT {int(batch)}", params


@dataclass
class EventPage:
    events: list[dict[str, Any]]
    cursor: int
    """Resume after this seq (the last event examined, matched or not)."""


async def read_events(
    store: Store,
    namespaces: Sequence[str],
    *,
    after: int = 0,
    flt: EventFilter | None = None,
    limit: int = 50,
) -> EventPage:
    """One page of matching events after ``after`` (bounded fetch, then filter)."""
    flt = flt or EventFilter()
    limit = max(1, min(limit, MAX_LIMIT))
    out: list[dict[str, Any]] = []
    cursor = after
    # Everything up to the head ``top`` is settled (agen.store.event_log), so once the rows up to it are
    # examined the cursor may move to it even if the SQL filter skipped the last ones.
    top = await log_head(store)
    if top == 0 or top == after:
        return EventPage(out, after)
    for _ in range(20):  # at most 10k rows examined per call
        sql, params = _query(store.dialect, namespaces, cursor, top, flt, _BATCH)
        rows = await store.rows(EventRow, sql, params)
        for row in rows:
            cursor = row.seq
            if flt.matches(row):
                out.append(decode(row))
                if len(out) >= limit:
                    return EventPage(out, cursor)
        if len(rows) < _BATCH:  # every row up to the head was examined
            return EventPage(out, top if store.dialect == "postgres" else max(cursor, top))
    return EventPage(out, cursor)


async def log_head(store: Store) -> int:
    """The cursor of "now": the newest settled event (agen.store.event_log); reading after it starts
    with what comes next."""
    return int(await store.scalar(event_log.head_sql(store.dialect)) or 0)


async def list_events(
    store: Store,
    namespaces: Sequence[str],
    *,
    after: int = 0,
    flt: EventFilter | None = None,
    limit: int = 50,
    wait_s: float = 0.0,
) -> EventPage:
    """ListEvents: matching events after a cursor; with ``wait_s``, wait for the first one."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(0.0, wait_s)
    page = await read_events(store, namespaces, after=after, flt=flt, limit=limit)
    while not page.events:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return page
        await store.wait_for_events(page.cursor, remaining)
        page = await read_events(store, namespaces, after=page.cursor, flt=flt, limit=limit)
    return page


async def tail_start(
    store: Store, namespaces: Sequence[str], last: int, flt: EventFilter | None = None
) -> int:
    """The cursor that shows the newest ``last`` *matching* events of these namespaces (for `agen events`).

    The filter runs before the count: "the last 2 task.succeeded events" must not become "whichever
    of the last 2 events happen to be task.succeeded" (which is often none).
    """
    flt = flt or EventFilter()
    want = max(1, int(last))
    dialect = store.dialect
    where: list[str] = []
    params: list[Any] = []
    if namespaces:
        where.append(f"namespace IN ({','.join('?' * len(namespaces))})")
        params.extend(namespaces)
    extra, more = flt.sql()
    if extra:
        where.append(extra)
        params.extend(more)
    head = int(await store.scalar(event_log.head_sql(dialect)) or 0)
    if head == 0:
        return 0
    bound = event_log.upto(
        dialect, head
    )  # the first page ends at the head, the next ones before a row
    found: list[int] = []
    for _ in range(100):  # at most 50k rows examined per call
        cond, args = bound
        rows = await store.rows(
            EventRow,
            f"SELECT {event_log.COLUMNS} FROM events WHERE {' AND '.join([cond, *where])}"
            f" ORDER BY {event_log.order(dialect, desc=True)} LIMIT {_BATCH}",
            [*args, *params],
        )
        for row in rows:
            bound = event_log.before(dialect, row.seq)
            if flt.matches(row):
                found.append(row.seq)
                if len(found) >= want:
                    return await _preceding(store, found[-1])
        if len(rows) < _BATCH:
            break
    return await _preceding(store, found[-1]) if found else 0


async def _preceding(store: Store, seq: int) -> int:
    """The cursor just before event ``seq``: the event before it in the log's order (0 at the start)."""
    cond, args = event_log.before(store.dialect, seq)
    found = await store.scalar(
        f"SELECT seq FROM events WHERE {cond} ORDER BY {event_log.order(store.dialect, desc=True)}"
        " LIMIT 1",
        args,
    )
    return int(found or 0)


def prune_events(tx: Tx, now_ms: int, retention_ms: int = RETENTION_MS) -> int:
    """Delete events older than the retention (the leader runs it hourly); seq never restarts."""
    return tx.execute("DELETE FROM events WHERE created_ms < ?", (now_ms - retention_ms,))
