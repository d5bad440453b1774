"""agen migrate's table list comes from the schema itself: every table, parents before children, and the
same tables and columns on Postgres."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agen.store.copy_schema import POSTGRES_ONLY_COLUMNS, SKIPPED, copy_plan
from agen.store.migrate import migrate_sqlite


def test_the_plan_holds_every_table_the_migrations_create_with_parents_first(
    tmp_path: Path,
) -> None:
    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    migrate_sqlite(conn, "s", 0)
    tables = {
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if r[0] not in SKIPPED
    }
    plan = copy_plan()
    assert {t.name for t in plan} == tables
    position = {t.name: i for i, t in enumerate(plan)}
    for t in plan:
        parents = {r[2] for r in conn.execute(f'PRAGMA foreign_key_list("{t.name}")')}
        assert all(position[p] < position[t.name] for p in parents - {t.name}), t.name
        assert t.key or t.name == "tool_rate_calls"  # only the rate window has no primary key
    assert position["definitions"] < position["deployments"] < position["triggers"]
    assert position["sessions"] < position["conversations"] < position["messages"]


def test_postgres_has_the_same_tables_and_columns_as_the_plan(pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema()"
        ).fetchall()
    columns: dict[str, set[str]] = {}
    for table, column in rows:
        if column not in POSTGRES_ONLY_COLUMNS.get(table, ()):
            columns.setdefault(table, set()).add(column)
    for t in copy_plan():
        assert columns.get(t.name) == set(t.columns), t.name
