"""The event log's order, as followers read it on either engine (DESIGN.md §4).

A follower keeps a cursor (an int: the seq of the last event it examined, 0 for the start) and asks for the
events after it. On SQLite the one writer gives seqs in commit order, so "after" is ``seq > cursor``.

On Postgres transactions commit side by side, so a seq taken early may commit late: reading by seq would
skip it. Each event row records its transaction id (``xid8``, ``pg_current_xact_id()``), and the log's order
is (xid, seq). A follower reads only *settled* events, those of transactions older than the oldest one still
in flight (``xid < pg_snapshot_xmin(pg_current_snapshot())``): every transaction that could still add an
event before them has ended, and any transaction not yet begun gets a larger xid. That is the transactional
outbox's technique; it never waits for a commit and costs followers only a delay while an older
transaction is open. The cursor stays the seq of one event: its position is that event's (xid, seq), looked
up in the same statement. A cursor that names no event (its event was pruned, or ``tail_start`` stepped
before one) takes the xid of the first event after it by seq, so it resumes there.

These helpers give the SQL for each engine; the fragments use ``?`` placeholders and the events table
unaliased.
"""

from __future__ import annotations

from typing import Any

COLUMNS = "seq, id, namespace, type, severity, deployment, task_id, run_id, labels, data, dedupe_key, created_ms"
"""An event as readers see it (not Postgres's xid: it orders the log, it is not part of an event)."""
SETTLED = "xid < pg_snapshot_xmin(pg_current_snapshot())"
_POSITION = (
    "(COALESCE((SELECT c.xid FROM events c WHERE c.seq = ?),"
    " (SELECT c.xid FROM events c WHERE c.seq > ? ORDER BY c.seq LIMIT 1),"
    " pg_snapshot_xmin(pg_current_snapshot())), ?)"
)


def head_sql(dialect: str) -> str:
    """One value: the seq of the newest settled event (0 when there is none), the cursor of "now"."""
    if dialect != "postgres":
        return "SELECT COALESCE(MAX(seq), 0) AS seq FROM events"
    return (
        f"SELECT COALESCE((SELECT seq FROM events WHERE {SETTLED}"
        " ORDER BY xid DESC, seq DESC LIMIT 1), 0) AS seq"
    )


def order(dialect: str, *, desc: bool = False) -> str:
    """The ORDER BY terms of the log's order."""
    terms = ("seq",) if dialect != "postgres" else ("xid", "seq")
    return ", ".join(f"{t} DESC" if desc else t for t in terms)


def after(dialect: str, cursor: int) -> tuple[str, list[Any]]:
    """The condition "settled and after ``cursor``", and its parameters."""
    if dialect != "postgres":
        return "seq > ?", [cursor]
    if cursor <= 0:
        return SETTLED, []
    return f"{SETTLED} AND (xid, seq) > {_POSITION}", [cursor, cursor, cursor]


def upto(dialect: str, top: int) -> tuple[str, list[Any]]:
    """The condition "at or before event ``top``" (a head read before: everything up to it is settled)."""
    if dialect != "postgres":
        return "seq <= ?", [top]
    return f"(xid, seq) <= {_POSITION}", [top, top, top]


def before(dialect: str, seq: int) -> tuple[str, list[Any]]:
    """The condition "before event ``seq``" in the log's order."""
    if dialect != "postgres":
        return "seq < ?", [seq]
    return f"(xid, seq) < {_POSITION}", [seq, seq, seq]
