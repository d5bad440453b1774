"""``agen migrate``'s engine: copy every table of one store into another, resumably, then prove it.

Resumability: each table is copied in batches in primary-key order, and every batch commits together with a
progress row in the target (``agen_migrate_progress``: the last copied key and the count). A copy killed at
any point resumes after its last committed batch, so nothing is copied twice and nothing is skipped. A table
without a primary key is copied whole in one transaction (emptied first), which is just as safe.

Verification reads both sides again: per table the row count and an order-independent checksum (the sum of
a hash of each row, so the two engines' row orders do not matter). Both engines hand back the same Python
values for the same stored ones (TEXT -- JSON included, stored as text on both -- as str, INTEGER/BIGINT as
int, BLOB/BYTEA as bytes, NULL as None); a REAL's whole number is hashed as an int, so the row's ``repr`` is
its canonical form.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agen.errors import ConflictError, InvalidError, StoreError
from agen.store.copy_schema import TablePlan, copy_plan
from agen.store.copy_sides import PostgresSide, Progress, Side, SQLiteSide, Values
from agen.store.locate import Location

BATCH_ROWS = 5000
log = logging.getLogger("agen.store.copy")
_MOD = 1 << 128


def open_side(loc: Location, *, write: bool, field: str = "store") -> Side | None:
    """The store, migrated when ``write``; read-only otherwise (None: a SQLite file that does not exist yet).

    A path that cannot be a SQLite store (a folder, a file of something else, a name too long) is the
    user's input to fix, so it is an InvalidError naming ``field`` rather than a store failure."""
    if loc.path is None:
        return PostgresSide.open(loc.url, write=write)
    try:
        exists = loc.path.exists()
    except OSError as e:  # a name too long, a path through a file
        raise InvalidError(
            f"{field} {str(loc.path)[:200]}: not a usable path ({e.strerror})", field=field
        ) from e
    if not write and not exists:
        return None
    return SQLiteSide.open(loc.path, write=write, field=field)


@dataclass(frozen=True)
class TableCheck:
    """One table on both sides after the copy."""

    table: str
    source_rows: int
    target_rows: int
    source_checksum: str
    target_checksum: str

    @property
    def ok(self) -> bool:
        return self.source_rows == self.target_rows and self.source_checksum == self.target_checksum

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "source_rows": self.source_rows,
            "target_rows": self.target_rows,
            "source_checksum": self.source_checksum,
            "target_checksum": self.target_checksum,
            "ok": self.ok,
        }


def check_schema(side: Side, role: str) -> None:
    """The store's applied migrations must be exactly the ones this agen ships (for its engine)."""
    applied, shipped = side.applied(), side.shipped()
    if applied == shipped:
        return
    have, want = max(applied, default=0), max(shipped, default=0)
    raise StoreError(
        f"the {role} store {side.where} is at schema version {have}, this agen's is {want}"
        + (
            "; open it once with this agen (e.g. `agen up`, then `agen down`) to upgrade it, then migrate"
            if have < want
            else "; use the agen build that wrote it"
        ),
        store=side.where,
        schema=have,
        known=want,
    )


def resume_point(source: Side, target: Side | None) -> dict[str, Progress]:
    """What an earlier run already copied from ``source`` into ``target``; refuses a target holding anything
    else (rows this copy did not bring, or another source's copy)."""
    if target is None or not target.applied():
        return {}  # a store not made yet: nothing in it
    recorded = target.progress()
    others = sorted(s for s in recorded if s != source.ident)
    if others:
        raise ConflictError(
            f"the target {target.where} holds a copy of another store ({others[0]}); "
            "migrate into a new database or file",
            store=target.where,
        )
    mine = recorded.get(source.ident)
    if mine:
        return mine
    holding = [t.name for t in copy_plan() if target.has_rows(t)]
    if holding:
        raise ConflictError(
            f"the target {target.where} already holds data ({', '.join(holding[:5])}"
            + (f" and {len(holding) - 5} more tables" if len(holding) > 5 else "")
            + ") that agen migrate did not copy there; migrate into a new database or file",
            store=target.where,
            tables=holding,
        )
    return {}


def source_counts(source: Side) -> dict[str, int]:
    return {t.name: source.count(t) for t in copy_plan()}


OnProgress = Callable[[TablePlan, int], None]  # table, rows copied so far (called after each batch)


def copy_all(
    source: Side,
    target: Side,
    *,
    batch_rows: int = BATCH_ROWS,
    on_progress: OnProgress | None = None,
) -> None:
    """Copy every table not yet done, parents first, then continue the target's generated keys.

    Each committed batch is logged at DEBUG on ``agen.store.copy`` (the record's ``batch`` is its
    number in this run): what a copy has made durable so far, for whoever watches the log."""
    done_before = resume_point(source, target)  # refuses a foreign target before writing anything
    target.ensure_progress_table()
    batches = 0
    for t in copy_plan():
        p = done_before.get(t.name) or Progress(None, 0, False)
        if on_progress is not None:
            on_progress(t, p.copied)
        while not p.done:
            if t.key:
                rows = source.batch(t, p.last_key, batch_rows)
                last = _key(t, rows[-1]) if rows else p.last_key
                p = Progress(last, p.copied + len(rows), len(rows) < batch_rows)
            else:
                rows = list(source.scan(t))
                p = Progress(None, len(rows), True)
            target.write_batch(t, rows, source.ident, p, replace=not t.key)
            batches += 1
            log.debug(
                "%s: batch %d committed, %d rows copied",
                t.name,
                batches,
                p.copied,
                extra={"batch": batches},
            )
            if on_progress is not None:
                on_progress(t, p.copied)
    target.finish_sequences()


def _key(t: TablePlan, row: Values) -> Values:
    return tuple(row[i] for i in t.key_index)


def verify(
    source: Side, target: Side, on_table: Callable[[str], None] | None = None
) -> list[TableCheck]:
    out = []
    for t in copy_plan():
        if on_table is not None:
            on_table(t.name)
        sn, ss = checksum(source, t)
        tn, ts = checksum(target, t)
        out.append(TableCheck(t.name, sn, tn, ss, ts))
    return out


def checksum(side: Side, t: TablePlan) -> tuple[int, str]:
    """Row count and the sum (mod 2^128) of each row's hash: independent of row order."""
    n, total = 0, 0
    reals = t.real_index
    blake = hashlib.blake2b
    for row in side.scan(t):
        n += 1
        if reals:
            row = _whole_floats(row, reals)
        total += int.from_bytes(blake(repr(row).encode(), digest_size=16).digest(), "big")
    return n, f"{total % _MOD:032x}"


def _whole_floats(row: Values, reals: tuple[int, ...]) -> Values:
    """A REAL column's whole number as an int: SQLite may keep ``0`` where Postgres says ``0.0``."""
    out = list(row)
    for i in reals:
        v = out[i]
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
            out[i] = int(v)
    return tuple(out)
