"""HostTables is the whole of what a Nest's instances touch: every table named in the SQL of the engine,
the Nest and the rules they share (agen/runner, agen/nest, agen/domain) is a host table, a host read, or
the pause columns of tasks; so a host role (agen store host-role) can run them. A change that makes the
engine use another table must extend agen.store.host_tables (and operators re-run the command)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from agen.store.host_tables import HOST_READS, HOST_TABLES
from agen.store.migrate import migrate_sqlite

ROOT = Path(__file__).resolve().parents[2] / "agen"
_NAMED = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+([a-z_][a-z0-9_]*)", re.IGNORECASE)


def _schema_tables() -> set[str]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate_sqlite(conn, ":memory:", 0)
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_every_table_the_engine_and_the_nest_name_is_a_host_table_or_a_host_read() -> None:
    tables = _schema_tables()
    named: dict[str, set[str]] = {}
    for folder in ("runner", "nest", "domain"):
        for path in (ROOT / folder).rglob("*.py"):
            for name in _NAMED.findall(path.read_text()):
                if name in tables:
                    named.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    allowed = {t.name for t in HOST_TABLES} | set(HOST_READS) | {"tasks"}
    assert {t: where for t, where in named.items() if t not in allowed} == {}
    # tasks: only its pause state, read by the checkpoint's statement
    assert named["tasks"] == {"runner/records.py"}
    assert {t.name for t in HOST_TABLES} <= tables


def test_child_tables_name_a_parent_that_is_itself_a_host_table_with_the_columns() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate_sqlite(conn, ":memory:", 0)

    def columns(table: str) -> set[str]:
        return {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}

    names = {t.name for t in HOST_TABLES}
    for table in HOST_TABLES:
        if table.parent is None:
            assert "namespace" in columns(table.name), table.name
        else:
            parent, key, column = table.parent
            assert parent in names and key in columns(parent) and column in columns(table.name)
