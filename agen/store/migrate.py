"""Versioned, append-only migrations (``migrations/NNNN_name.sql``) recorded in schema_migrations.

Each applied migration's checksum (sha256 of its SQL text) is recorded with it, and a store whose applied
migration differs from the one this agen ships is refused: a migration edited after it shipped would
otherwise leave stores made before and after the edit with different schemas under the same version.
``python -m agen.store.migrations`` prints the lines of migrations/SHIPPED.txt.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from dataclasses import dataclass
from importlib import resources

from agen.errors import SchemaTooNewError, StoreError

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str
    filename: str = ""

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def known_migrations(dialect: str = "sqlite") -> list[Migration]:
    """Every migration shipped in agen.store.migrations, in version order.

    A file ``NNNN_name.<dialect>.sql`` replaces ``NNNN_name.sql`` for that dialect only.
    """
    pkg = resources.files("agen.store.migrations")
    found: dict[int, Migration] = {}
    bases: dict[int, str] = {}
    for entry in sorted(pkg.iterdir(), key=lambda e: e.name):
        fname = entry.name
        variant = f".{dialect}.sql"
        is_variant = fname.endswith(variant)
        base = fname[: -len(variant)] + ".sql" if is_variant else fname
        m = _NAME.match(base)
        if not m or (not is_variant and fname.count(".") > 1):
            continue
        version = int(m.group(1))
        if (
            bases.setdefault(version, base) != base
        ):  # two migrations took one number: one would be skipped
            raise StoreError(
                f"two migrations share number {version:04d}: {bases[version]} and {base}; "
                "renumber the newer one"
            )
        if version in found and not is_variant:
            continue
        found[version] = Migration(version, m.group(2), entry.read_text(encoding="utf-8"), fname)
    versions = sorted(found)
    if versions != list(range(1, len(versions) + 1)):
        raise StoreError(
            f"migrations are not numbered 0001..{len(versions):04d} without gaps: {versions}"
        )
    return [found[v] for v in versions]


def split_statements(sql: str) -> list[str]:
    """Split a script into complete statements (sqlite3.complete_statement decides the ends)."""
    out: list[str] = []
    buf: list[str] = []
    for line in sql.splitlines(keepends=True):
        buf.append(line)
        text = "".join(buf)
        if sqlite3.complete_statement(text):
            stmt = text.strip()
            if stmt.strip(";").strip() and not all(
                ln.strip().startswith("--") or not ln.strip() for ln in stmt.splitlines()
            ):
                out.append(stmt)
            buf = []
    rest = "".join(buf).strip()
    if rest and not all(ln.strip().startswith("--") or not ln.strip() for ln in rest.splitlines()):
        out.append(rest)
    return out


def applied_version(conn: sqlite3.Connection) -> int:
    has = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
    ).fetchone()
    if not has:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


_CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms INTEGER NOT NULL, checksum TEXT)"
)


def migrate_sqlite(conn: sqlite3.Connection, where: str, now_ms: int) -> int:
    """Apply every missing migration, each in its own transaction; returns the schema version.

    Safe to run from several processes at once: each migration re-checks the version under
    BEGIN IMMEDIATE. A store written by a newer agen is refused, never touched; so is one whose
    applied migrations differ from the shipped ones (see check_checksums).
    """
    migrations = known_migrations("sqlite")
    latest = migrations[-1].version if migrations else 0
    current = applied_version(conn)
    if current > latest:
        raise SchemaTooNewError(
            f"the store {where} has schema version {current}, but this agen only knows up to "
            f"{latest}; it was written by a newer agen. Upgrade agen, or point --store elsewhere.",
            store=where,
            schema=current,
            known=latest,
        )
    if current:
        check_checksums(conn, where, migrations)
    for mig in migrations:
        if mig.version <= current:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_CREATE_TABLE)
            if applied_version(conn) >= mig.version:  # another process got there first
                conn.execute("COMMIT")
                continue
            for stmt in split_statements(mig.sql):
                conn.execute(stmt)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_ms, checksum) VALUES (?, ?, ?, ?)",
                (mig.version, mig.name, now_ms, mig.checksum),
            )
            conn.execute("COMMIT")
        except sqlite3.Error as e:
            if conn.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
                conn.execute("ROLLBACK")
            raise StoreError(
                f"migration {mig.version:04d}_{mig.name} failed on {where}: {e}",
                store=where,
                migration=mig.version,
            ) from e
    return max(current, latest)


def check_checksums(conn: sqlite3.Connection, where: str, migrations: list[Migration]) -> None:
    """Refuse a store whose applied migrations are not the shipped ones; record checksums a store lacks.

    Stores made before checksums were recorded get the current text's hash for their applied rows (one
    write, the first time); after that a mismatch means the shipped file changed after it ran here.
    """
    shipped = {m.version: m for m in migrations}
    columns = {r[1] for r in conn.execute("PRAGMA table_info(schema_migrations)")}
    if (
        "checksum" not in columns
        or conn.execute("SELECT 1 FROM schema_migrations WHERE checksum IS NULL LIMIT 1").fetchone()
    ):
        conn.execute("BEGIN IMMEDIATE")
        try:
            if "checksum" not in {
                r[1] for r in conn.execute("PRAGMA table_info(schema_migrations)")
            }:
                conn.execute("ALTER TABLE schema_migrations ADD COLUMN checksum TEXT")
            for (version,) in conn.execute(
                "SELECT version FROM schema_migrations WHERE checksum IS NULL"
            ).fetchall():
                if version in shipped:
                    conn.execute(
                        "UPDATE schema_migrations SET checksum = ? WHERE version = ?",
                        (shipped[version].checksum, version),
                    )
            conn.execute("COMMIT")
        except sqlite3.Error as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(
                f"cannot record migration checksums in {where}: {e}", store=where
            ) from e
    for version, name, checksum in conn.execute(
        "SELECT version, name, checksum FROM schema_migrations"
    ):
        mig = shipped.get(version)
        if mig is not None and checksum != mig.checksum:
            raise StoreError(
                f"the store {where} applied migration {version:04d}_{name} from a different text than this "
                f"agen ships (checksum {str(checksum)[:12]} vs {mig.checksum[:12]}), so its schema may not be "
                "what this agen expects. Open it with the agen build that made it, or start a new store "
                "(--store <new path>)",
                store=where,
                migration=version,
                applied_checksum=checksum,
                shipped_checksum=mig.checksum,
            )


MANIFEST_HEADER = [
    "# sha256 of each shipped migration (python -m agen.store.migrations > agen/store/migrations/SHIPPED.txt).",
    "# A new migration adds a line; old lines never change: a changed line is an edited migration, so add one.",
]


DIALECTS = ("sqlite", "postgres")


def manifest_lines() -> list[str]:
    """The content of migrations/SHIPPED.txt: a header, then ``<file> <sha256>`` per shipped migration file
    (the shared ones and every dialect's variants)."""
    files = {m.filename: m for d in DIALECTS for m in known_migrations(d)}
    ordered = sorted(files.values(), key=lambda m: (m.version, m.filename))
    return [*MANIFEST_HEADER, *(f"{m.filename} {m.checksum}" for m in ordered)]
