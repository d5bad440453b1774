"""Which tables ``agen migrate`` copies, in what order, keyed how: read from the shipped migrations themselves.

The shipped migrations are applied to an in-memory SQLite database and its catalogue is read, so a table a
new migration adds is copied without anyone updating a list. Tables come parents first (by their foreign
keys), so a target that checks foreign keys accepts every batch. Both engines run the same migrations (only
column types are spelled differently), so the table and column names hold for Postgres too.
"""

from __future__ import annotations

import functools
import graphlib
import sqlite3
from dataclasses import dataclass

from agen.store.migrate import migrate_sqlite

# Bookkeeping, not data: each store records its own migrations; the copier's progress describes one copy.
SKIPPED = frozenset({"schema_migrations", "sqlite_sequence"})
PROGRESS_TABLE = "agen_migrate_progress"
# What only Postgres has (migration 0025): each event's transaction id orders its event log
# (agen.store.event_log). Never copied: ids from another cluster would not compare with this one's, so a
# copy's events take the copying transaction's id, older than anything written after.
POSTGRES_ONLY_COLUMNS = {"events": frozenset({"xid"})}
POSTGRES_ONLY_INDEXES = frozenset({"events_xid_seq"})


@dataclass(frozen=True)
class TablePlan:
    """One table to copy: its columns in a fixed order and the key its batches follow."""

    name: str
    columns: tuple[str, ...]
    key: tuple[
        str, ...
    ]  # the primary key; empty for a table without one (copied whole, in one batch)
    parents: tuple[str, ...] = ()
    real_index: tuple[int, ...] = ()  # the REAL columns (floating point on both engines)

    @property
    def key_index(self) -> tuple[int, ...]:
        return tuple(self.columns.index(k) for k in self.key)


@functools.cache
def copy_plan() -> tuple[TablePlan, ...]:
    """Every table the migrations create, parents before children."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate_sqlite(conn, ":memory:", 0)
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "ORDER BY name"
            )
        ]
        plans: dict[str, TablePlan] = {}
        for name in names:
            if name in SKIPPED:
                continue
            info = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
            columns = tuple(str(r[1]) for r in info)
            key = tuple(str(r[1]) for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
            parents = tuple(
                sorted(
                    {str(r[2]) for r in conn.execute(f'PRAGMA foreign_key_list("{name}")')} - {name}
                )
            )
            reals = tuple(i for i, r in enumerate(info) if str(r[2]).upper() == "REAL")
            plans[name] = TablePlan(name, columns, key, parents, reals)
    finally:
        conn.close()
    sorter = graphlib.TopologicalSorter({n: p.parents for n, p in plans.items()})
    sorter.prepare()
    ordered: list[str] = []
    while sorter.is_active():  # each ready group alphabetically: the same order on every run
        ready = sorted(sorter.get_ready())
        ordered.extend(ready)
        sorter.done(*ready)
    return tuple(plans[n] for n in ordered)
