"""The two ends of ``agen migrate``: a SQLite file or a Postgres database, read and written in keyed batches.

Raw connections, not the Store adapters: a copy reads and writes whole tables in batches on one connection
and needs none of the writer thread, group commit or event wake-ups. Identifiers come from the shipped
schema (agen.store.copy_schema), never from a user, and are quoted for both engines.
"""

from __future__ import annotations

import abc
import json
import sqlite3
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agen.errors import ConflictError, InvalidError, StoreError
from agen.store._pg_sql import ddl_for_postgres
from agen.store.base import now_ms
from agen.store.copy_schema import PROGRESS_TABLE, TablePlan
from agen.store.migrate import known_migrations

Values = tuple[Any, ...]
SCAN_CHUNK = 5000

_PROGRESS_DDL = (
    f"CREATE TABLE IF NOT EXISTS {PROGRESS_TABLE} ("
    "source TEXT NOT NULL, table_name TEXT NOT NULL, last_key TEXT, copied INTEGER NOT NULL DEFAULT 0, "
    "done INTEGER NOT NULL DEFAULT 0, updated_ms INTEGER NOT NULL, PRIMARY KEY (source, table_name))"
)
_PROGRESS_UPSERT = (
    f"INSERT INTO {PROGRESS_TABLE} (source, table_name, last_key, copied, done, updated_ms) "
    "VALUES ({p}, {p}, {p}, {p}, {p}, {p}) ON CONFLICT (source, table_name) DO UPDATE SET "
    "last_key = excluded.last_key, copied = excluded.copied, done = excluded.done, "
    "updated_ms = excluded.updated_ms"
)


@dataclass(frozen=True)
class Progress:
    """How far one table's copy from one source has come (committed with its last batch)."""

    last_key: Values | None
    copied: int
    done: bool


def q(name: str) -> str:
    return f'"{name}"'


def cols(t: TablePlan) -> str:
    return ", ".join(q(c) for c in t.columns)


class Side(abc.ABC):
    """One store, as the copier sees it."""

    dialect: str
    where: str  # for messages: never a password
    ident: str  # what the target's progress rows call this store when it is the source

    # -- reading -------------------------------------------------------------------------------

    @abc.abstractmethod
    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Values]:
        """The rows of one statement, in this engine's own SQL and placeholder (``_p``)."""

    @abc.abstractmethod
    def scan(self, t: TablePlan) -> Iterator[Values]:
        """Every row of ``t`` (any order), in chunks: tables can be larger than memory should hold."""

    @property
    @abc.abstractmethod
    def _p(self) -> str:
        """The engine's placeholder."""

    def count(self, t: TablePlan) -> int:
        return int(self.rows(f"SELECT COUNT(*) FROM {q(t.name)}")[0][0])

    def has_rows(self, t: TablePlan) -> bool:
        return bool(self.rows(f"SELECT 1 FROM {q(t.name)} LIMIT 1"))

    def batch(self, t: TablePlan, after: Values | None, limit: int) -> list[Values]:
        """The next ``limit`` rows of ``t`` after key ``after``, in key order (this engine's order: the key
        only ever goes back to the engine that made it)."""
        key = ", ".join(q(k) for k in t.key)
        where, params = "", list(after or ())
        if after is not None:
            marks = ", ".join([self._p] * len(t.key))
            where = f" WHERE ({key}) > ({marks})" if len(t.key) > 1 else f" WHERE {key} > {marks}"
        sql = f"SELECT {cols(t)} FROM {q(t.name)}{where} ORDER BY {key} LIMIT {int(limit)}"
        return self.rows(sql, params)

    def applied(self) -> dict[int, str]:
        """The migrations applied here (version -> checksum); empty for a store not made yet."""
        if not self._has_table("schema_migrations"):
            return {}
        return {
            int(v): str(c) for v, c in self.rows("SELECT version, checksum FROM schema_migrations")
        }

    def shipped(self) -> dict[int, str]:
        return {m.version: m.checksum for m in known_migrations(self.dialect)}

    def progress(self) -> dict[str, dict[str, Progress]]:
        """source -> table -> progress, as recorded by earlier runs that copied into this store."""
        if not self._has_table(PROGRESS_TABLE):
            return {}
        out: dict[str, dict[str, Progress]] = {}
        for source, table, last_key, copied, done in self.rows(
            f"SELECT source, table_name, last_key, copied, done FROM {PROGRESS_TABLE}"
        ):
            key = tuple(json.loads(last_key)) if last_key else None
            out.setdefault(str(source), {})[str(table)] = Progress(key, int(copied), bool(done))
        return out

    @abc.abstractmethod
    def _has_table(self, name: str) -> bool: ...

    # -- writing -------------------------------------------------------------------------------

    @abc.abstractmethod
    def ensure_progress_table(self) -> None: ...

    @abc.abstractmethod
    def write_batch(
        self, t: TablePlan, rows: list[Values], source: str, progress: Progress, replace: bool
    ) -> None:
        """Insert ``rows`` and record ``progress`` in one transaction (``replace``: empty the table first,
        for a table without a key, which is copied whole)."""

    def finish_sequences(self) -> None:
        """Make generated keys continue after the copied ones (SQLite's AUTOINCREMENT does so by itself)."""
        return None

    @abc.abstractmethod
    def close(self) -> None: ...

    def _progress_params(self, source: str, t: TablePlan, p: Progress) -> Values:
        key = json.dumps(list(p.last_key)) if p.last_key is not None else None
        return (source, t.name, key, p.copied, int(p.done), now_ms())

    def _conflict(self, t: TablePlan, e: Exception) -> ConflictError:
        return ConflictError(
            f"copying {t.name} into {self.where}: the target already holds a row the copy brings ({e}); "
            "it holds data agen migrate did not copy: migrate into a new database or file",
            store=self.where,
            table=t.name,
        )


class SQLiteSide(Side):
    dialect = "sqlite"
    _p = "?"

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn
        self.where = str(path)
        self.ident = f"sqlite:{path.expanduser().resolve()}"

    @classmethod
    def open(cls, path: Path, *, write: bool, field: str = "store") -> SQLiteSide:
        """``write``: create and migrate the file as a store (0600); else open an existing one read-only.

        A path that cannot be a SQLite store (a folder, a file of something else) is the user's input to fix:
        an InvalidError naming ``field``."""
        from agen.store.migrate import migrate_sqlite
        from agen.store.sqlite import BUSY_TIMEOUT_MS
        from agen.util.home import prepare_store_file

        try:
            if write:
                prepare_store_file(path)
                conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
                conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA foreign_keys=ON")
                migrate_sqlite(conn, str(path), now_ms())
            else:
                uri = "file:" + urllib.parse.quote(str(path.expanduser().resolve())) + "?mode=ro"
                conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
                conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        except (sqlite3.Error, OSError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise InvalidError(
                f"{field} {str(path)[:200]}: cannot be used as a SQLite store ({reason}); "
                "name a store file, or a new path",
                field=field,
            ) from e
        return cls(path, conn)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Values]:
        try:
            return [tuple(r) for r in self.conn.execute(sql, tuple(params))]
        except sqlite3.Error as e:
            raise StoreError(f"reading {self.where}: {e}", store=self.where) from e

    def scan(self, t: TablePlan) -> Iterator[Values]:
        cur = self.conn.execute(f"SELECT {cols(t)} FROM {q(t.name)}")
        while chunk := cur.fetchmany(SCAN_CHUNK):
            yield from chunk

    def _has_table(self, name: str) -> bool:
        return bool(
            self.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        )

    def ensure_progress_table(self) -> None:
        self.conn.execute(_PROGRESS_DDL)

    def write_batch(
        self, t: TablePlan, rows: list[Values], source: str, progress: Progress, replace: bool
    ) -> None:
        marks = ", ".join("?" * len(t.columns))
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if replace:
                self.conn.execute(f"DELETE FROM {q(t.name)}")
            self.conn.executemany(f"INSERT INTO {q(t.name)} ({cols(t)}) VALUES ({marks})", rows)
            self.conn.execute(
                _PROGRESS_UPSERT.format(p="?"), self._progress_params(source, t, progress)
            )
            self.conn.execute("COMMIT")
        except sqlite3.IntegrityError as e:
            self.conn.execute("ROLLBACK")
            raise self._conflict(t, e) from e
        except sqlite3.Error as e:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise StoreError(f"writing {t.name} into {self.where}: {e}", store=self.where) from e

    def close(self) -> None:
        self.conn.close()


class PostgresSide(Side):
    dialect = "postgres"
    _p = "%s"

    def __init__(self, url: str, conn: Any) -> None:
        from agen.store.locate import redact_url as _redact

        self.url = url
        self.conn = conn
        self.where = self.ident = _redact(url)

    @classmethod
    def open(cls, url: str, *, write: bool) -> PostgresSide:
        """``write``: migrate the database as a store; else only read it."""
        import psycopg

        from agen.store._pg_migrate import migrate_postgres
        from agen.store.locate import redact_url as _redact
        from agen.store.postgres import CONNECT_TIMEOUT_S

        where = _redact(url)
        try:
            conn = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as e:
            raise StoreError(f"cannot open the store {where}: {e}", store=where) from e
        try:
            if write:
                migrate_postgres(conn, where, now_ms())
            conn.autocommit = True
        except BaseException:
            conn.close()
            raise
        return cls(url, conn)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Values]:
        import psycopg

        try:
            return [tuple(r) for r in self.conn.execute(sql, tuple(params)).fetchall()]
        except psycopg.Error as e:
            raise StoreError(f"reading {self.where}: {e}", store=self.where) from e

    def scan(self, t: TablePlan) -> Iterator[Values]:
        with self.conn.transaction(), self.conn.cursor(name=f"agen_scan_{t.name}") as cur:
            cur.itersize = SCAN_CHUNK
            cur.execute(f"SELECT {cols(t)} FROM {q(t.name)}")
            yield from (tuple(r) for r in cur)

    def _has_table(self, name: str) -> bool:
        return bool(self.rows("SELECT to_regclass(%s) IS NOT NULL", (name,))[0][0])

    def ensure_progress_table(self) -> None:
        self.conn.execute(ddl_for_postgres(_PROGRESS_DDL))

    def write_batch(
        self, t: TablePlan, rows: list[Values], source: str, progress: Progress, replace: bool
    ) -> None:
        """COPY, not INSERT: several times faster, and the progress row in the same transaction already
        guarantees no row is sent twice."""
        import psycopg

        try:
            with self.conn.transaction(), self.conn.cursor() as cur:
                if replace:
                    cur.execute(f"DELETE FROM {q(t.name)}")
                if rows:
                    with cur.copy(f"COPY {q(t.name)} ({cols(t)}) FROM STDIN") as cp:
                        for row in rows:
                            cp.write_row(row)
                cur.execute(
                    _PROGRESS_UPSERT.format(p="%s"), self._progress_params(source, t, progress)
                )
        except psycopg.errors.IntegrityError as e:
            raise self._conflict(t, e) from e
        except psycopg.Error as e:
            raise StoreError(f"writing {t.name} into {self.where}: {e}", store=self.where) from e

    def finish_sequences(self) -> None:
        """Every identity or serial column's sequence set so the next generated key follows the largest copied."""
        found = self.rows(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() "
            "AND (is_identity = 'YES' OR column_default LIKE 'nextval(%%')"
        )
        for table, column in found:
            seq = self.rows("SELECT pg_get_serial_sequence(%s, %s)", (q(table), column))[0][0]
            if seq:
                self.rows(
                    f"SELECT setval(%s, COALESCE((SELECT MAX({q(column)}) FROM {q(table)}), 0) + 1, false)",
                    (seq,),
                )

    def close(self) -> None:
        self.conn.close()
