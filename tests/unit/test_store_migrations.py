"""Shipped migrations never change, and a store whose applied migrations differ from them is refused."""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

import pytest

from agen.errors import StoreError
from agen.store import SQLiteStore
from agen.store.migrate import known_migrations, manifest_lines

# The committed manifest of shipped migrations: one "<file> <sha256>" line each. A new migration adds a
# line (`python -m agen.store.migrations > agen/store/migrations/SHIPPED.txt`); old lines never change.
# A diff that changes an old line is an edited migration: add a new migration instead.
MANIFEST = resources.files("agen.store.migrations") / "SHIPPED.txt"


def _entries(lines: list[str]) -> dict[str, str]:
    return dict(ln.split() for ln in lines if ln.strip() and not ln.startswith("#"))


def test_every_shipped_migration_matches_the_committed_manifest() -> None:
    committed = _entries(MANIFEST.read_text(encoding="utf-8").splitlines())
    current = _entries(manifest_lines())
    changed = sorted(f for f in committed.keys() & current.keys() if committed[f] != current[f])
    assert not changed, (
        f"shipped migrations were edited: {changed}; restore them and add a new migration"
    )
    assert not committed.keys() - current.keys(), "shipped migrations were removed or renamed"
    assert not current.keys() - committed.keys(), (
        "new migrations lack a manifest line: python -m agen.store.migrations > agen/store/migrations/SHIPPED.txt"
    )


def _sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for stmt in statements:
            conn.execute(stmt)
        conn.commit()
    finally:
        conn.close()


async def test_a_store_whose_applied_migration_differs_from_the_shipped_one_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.db"
    await (await SQLiteStore.open(path)).close()
    _sql(path, "UPDATE schema_migrations SET checksum = 'edited-after-it-ran' WHERE version = 1")
    with pytest.raises(StoreError) as info:
        await SQLiteStore.open(path)
    msg = str(info.value)
    assert "0001_core" in msg and "different text" in msg and "--store" in msg
    assert info.value.details["migration"] == 1


async def test_a_store_made_before_checksums_gets_them_recorded_and_opens(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    await (await SQLiteStore.open(path)).close()
    _sql(
        path, "ALTER TABLE schema_migrations DROP COLUMN checksum"
    )  # as stores made before this change
    store = await SQLiteStore.open(path)
    try:
        rows = await store.all("SELECT version, checksum FROM schema_migrations ORDER BY version")
        assert [(r["version"], r["checksum"]) for r in rows] == [
            (m.version, m.checksum) for m in known_migrations()
        ]
    finally:
        await store.close()
    await (await SQLiteStore.open(path)).close()  # and opens again, now checked


def test_two_migrations_with_one_number_are_refused_not_one_silently_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two engineers adding 0011 at once must not leave one of them never applied."""
    pkg = tmp_path / "migs"
    pkg.mkdir()
    (pkg / "0001_core.sql").write_text("CREATE TABLE a (x INTEGER);\n")
    (pkg / "0002_one.sql").write_text("CREATE TABLE b (x INTEGER);\n")
    (pkg / "0002_other.sql").write_text("CREATE TABLE c (x INTEGER);\n")
    monkeypatch.setattr(resources, "files", lambda _name: pkg)
    with pytest.raises(StoreError, match="two migrations share number 0002"):
        known_migrations()
