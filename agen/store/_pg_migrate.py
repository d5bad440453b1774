"""The Postgres migrator: the same append-only migrations, versions and checksums as migrate_sqlite.

Shared files are applied through the type map of ``ddl_for_postgres``; a ``NNNN_name.postgres.sql`` variant is
applied as written. A session advisory lock makes concurrent migrators (two Hubs starting together) take
turns; each migration and its schema_migrations row commit together. A store whose schema is current is
only read (no DDL, no lock): that is how a host role, which may not change the schema, opens it
(agen.store.host_role).
"""

from __future__ import annotations

from typing import Any

from agen.errors import SchemaTooNewError, StoreError
from agen.store._pg_sql import ddl_for_postgres
from agen.store.migrate import Migration, known_migrations, split_statements

_LOCK_KEY = 0x6167656E_6D6967  # "agen" "mig"
_CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_ms BIGINT NOT NULL, checksum TEXT)"
)


def postgres_sql(mig: Migration) -> str:
    return mig.sql if mig.filename.endswith(".postgres.sql") else ddl_for_postgres(mig.sql)


def _applied(conn: Any, where: str, migrations: list[Migration]) -> int:
    """The store's schema version, checked against what this agen ships (read only)."""
    latest = migrations[-1].version if migrations else 0
    rows = conn.execute(
        "SELECT version, name, checksum FROM schema_migrations ORDER BY version"
    ).fetchall()
    conn.commit()
    current = max((int(_get(r, 0, "version")) for r in rows), default=0)
    if current > latest:
        raise SchemaTooNewError(
            f"the store {where} has schema version {current}, but this agen only knows up to "
            f"{latest}; it was written by a newer agen. Upgrade agen, or point --store elsewhere.",
            store=where,
            schema=current,
            known=latest,
        )
    shipped = {m.version: m for m in migrations}
    for r in rows:
        version, name, checksum = (
            _get(r, 0, "version"),
            _get(r, 1, "name"),
            _get(r, 2, "checksum"),
        )
        mig = shipped.get(version)
        if mig is not None and checksum != mig.checksum:
            raise StoreError(
                f"the store {where} applied migration {version:04d}_{name} from a different text than this "
                f"agen ships (checksum {str(checksum)[:12]} vs {mig.checksum[:12]}), so its schema may not be "
                "what this agen expects. Open it with the agen build that made it, or use a new database",
                store=where,
                migration=version,
                applied_checksum=checksum,
                shipped_checksum=mig.checksum,
            )
    return current


def _is_current(conn: Any, where: str, migrations: list[Migration]) -> bool:
    """Whether the schema is already this agen's, found without DDL or locks."""
    found = conn.execute(
        "SELECT to_regclass('schema_migrations') IS NOT NULL AS present"
    ).fetchone()
    conn.commit()
    if not _get(found, 0, "present"):
        return False
    return _applied(conn, where, migrations) == (migrations[-1].version if migrations else 0)


def migrate_postgres(conn: Any, where: str, now_ms: int) -> int:
    """Apply every missing migration on ``conn`` (a psycopg connection, not in a transaction)."""
    import psycopg

    migrations = known_migrations("postgres")
    latest = migrations[-1].version if migrations else 0
    if _is_current(conn, where, migrations):
        return latest
    conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
    try:
        try:
            conn.execute(_CREATE_TABLE)
        except psycopg.errors.InsufficientPrivilege:
            raise StoreError(
                f"the store {where} needs migrations to this agen's schema ({latest}), and this role "
                "may not change the schema (a host role?): start a Hub of this version on it first",
                store=where,
            ) from None
        conn.commit()
        current = _applied(conn, where, migrations)
        for mig in migrations:
            if mig.version <= current:
                continue
            try:
                with conn.transaction():
                    for stmt in split_statements(postgres_sql(mig)):
                        conn.execute(stmt.replace("%", "%%"), ())
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name, applied_ms, checksum) VALUES (%s, %s, %s, %s)",
                        (mig.version, mig.name, now_ms, mig.checksum),
                    )
            except psycopg.Error as e:
                raise StoreError(
                    f"migration {mig.version:04d}_{mig.name} failed on {where}: {e}",
                    store=where,
                    migration=mig.version,
                ) from e
        return max(current, latest)
    finally:
        if not conn.closed:
            conn.rollback()
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
            conn.commit()


def _get(row: Any, index: int, key: str) -> Any:
    return row[key] if isinstance(row, dict) else row[index]
