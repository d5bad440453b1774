"""The built-in SQL MCP server: read-only queries against SQLite (and Postgres with psycopg).

Run as ``agen mcp sql [--dsn-env NAME]``; the DSN comes from that environment variable
(default AGEN_SQL_DSN) so credentials stay out of argv. SQLite opens with ``mode=ro``
and ``PRAGMA query_only``; Postgres sessions are read-only transactions. Only the read
PRAGMAs in READ_PRAGMAS run (a PRAGMA can switch ``query_only`` off, and SQLite applies
many PRAGMAs while compiling, so they are checked before anything reaches SQLite).
A statement SQLite cannot parse is reported as a syntax error with SQLite's message.
Results are capped at ROW_CAP rows, with a note when rows were left out.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

ROW_CAP = 500
CELL_CAP = 500
DEFAULT_DSN_ENV = "AGEN_SQL_DSN"
_READ_VERBS = {"select", "with", "explain", "values", "pragma", "show", "table"}
# PRAGMAs that only describe the schema; every other PRAGMA (query_only, writable_schema, ...) is refused.
READ_PRAGMAS = (
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "database_list",
)
_EXPLAIN = re.compile(r"^explain\s+(query\s+plan\s+)?", re.I)
_PRAGMA = re.compile(r"pragma\s+(?:\w+\s*\.\s*)?(\w+)\s*(.*)$", re.I | re.S)
_WRITE_ERRORS = ("readonly", "read-only", "query_only", "read only")


class ReadOnlyError(ValueError):
    """A statement tried to change the database."""


class SqlSyntaxError(ValueError):
    """The database could not parse the statement."""


@dataclass
class Rows:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool

    def render(self) -> str:
        if not self.columns:
            return "(no result set)"
        lines = ["\t".join(self.columns)]
        for row in self.rows:
            lines.append("\t".join(_cell(v) for v in row))
        note = f"{len(self.rows)} row{'s' if len(self.rows) != 1 else ''}"
        if self.truncated:
            note = f"first {len(self.rows)} rows shown; more rows matched (the cap is {ROW_CAP}): add LIMIT/WHERE to narrow"
        return "\n".join([*lines, f"[{note}]"])


def _cell(value: Any) -> str:
    text = "NULL" if value is None else value.hex() if isinstance(value, bytes) else str(value)
    text = text.replace("\t", " ").replace("\n", "\\n")
    return text if len(text) <= CELL_CAP else text[:CELL_CAP] + "…"


class Database(Protocol):
    def query(self, sql: str, params: Sequence[Any] | None) -> Rows: ...

    def tables(self) -> list[str]: ...


def check_read_only(sql: str) -> None:
    """Refuse statements that are not reads before they reach the database (the DB refuses too)."""
    stripped = _strip_comments(sql)
    verb = (stripped.split(None, 1) or [""])[0].lower().rstrip(";(")
    if verb not in _READ_VERBS:
        raise ReadOnlyError(
            f"this SQL server is read-only, so {verb.upper() or 'an empty statement'} is refused; "
            f"only SELECT, WITH, EXPLAIN, VALUES and the read PRAGMAs ({', '.join(READ_PRAGMAS)}) run"
        )
    body = _EXPLAIN.sub("", stripped)
    if body[:6].lower() == "pragma":
        check_pragma(body)


def _strip_comments(sql: str) -> str:
    return re.sub(r"^(\s|--[^\n]*\n|/\*.*?\*/)+", "", sql, flags=re.S)


def check_pragma(statement: str) -> None:
    """Allow ``PRAGMA [schema.]name`` or ``PRAGMA name(arg)`` for the names in READ_PRAGMAS only."""
    m = _PRAGMA.match(statement.strip().rstrip(";").strip())
    name = m.group(1).lower() if m else ""
    rest = m.group(2).strip() if m else ""
    if name not in READ_PRAGMAS or rest.startswith("="):
        shown = statement.strip().split("\n", 1)[0][:80]
        raise ReadOnlyError(
            f"this SQL server is read-only, so {shown!r} is refused; only these PRAGMAs run, "
            f"as PRAGMA name or PRAGMA name(arg): {', '.join(READ_PRAGMAS)}"
        )


class SqliteDatabase:
    def __init__(self, path: str) -> None:
        if not os.path.exists(path):
            raise FileNotFoundError(f"SQLite database {path} does not exist")
        self.conn = sqlite3.connect(
            f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True, check_same_thread=False
        )
        self.conn.execute("PRAGMA query_only = ON")

    def query(self, sql: str, params: Sequence[Any] | None) -> Rows:
        body = _EXPLAIN.sub("", _strip_comments(sql))
        if body[:6].lower() == "pragma":
            check_pragma(body)  # before SQLite compiles it: some PRAGMAs act at compile time
        self._compile(body, params)
        check_read_only(sql)
        try:
            cur = self.conn.execute(sql, tuple(params or ()))
            fetched = cur.fetchmany(ROW_CAP + 1)
        except sqlite3.Error as e:
            if "syntax error" in str(e) or "incomplete input" in str(e):
                raise SqlSyntaxError(
                    f"SQL syntax error: {e}; fix the statement and try again"
                ) from None
            if any(w in str(e).lower() for w in _WRITE_ERRORS):
                raise ReadOnlyError(
                    f"this SQL server is read-only; the database refused a write ({e})"
                ) from None
            raise
        finally:
            self.conn.rollback()
        columns = [d[0] for d in cur.description or ()]
        return Rows(columns, fetched[:ROW_CAP], len(fetched) > ROW_CAP)

    def _compile(self, sql: str, params: Sequence[Any] | None) -> None:
        """Let SQLite parse the statement without running it (EXPLAIN), so a typo reads as one."""
        try:
            self.conn.execute(f"EXPLAIN {sql}", tuple(params or ())).fetchmany(1)
        except sqlite3.ProgrammingError:
            return  # e.g. several statements or a wrong parameter count: the real run says so
        except sqlite3.Error as e:
            if "syntax error" in str(e) or "incomplete input" in str(e):
                raise SqlSyntaxError(
                    f"SQL syntax error: {e}; fix the statement and try again"
                ) from None
        finally:
            self.conn.rollback()

    def tables(self) -> list[str]:
        rows = self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table','view') ORDER BY name"
        )
        return [r[0] for r in rows]


class PostgresDatabase:
    def __init__(self, dsn: str) -> None:
        try:
            import psycopg  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise RuntimeError(
                "a postgres DSN needs psycopg: pip install 'agen[postgres]'"
            ) from None
        self.conn: Any = psycopg.connect(
            dsn, options="-c default_transaction_read_only=on", autocommit=False
        )
        self.conn.read_only = True

    def query(self, sql: str, params: Sequence[Any] | None) -> Rows:
        check_read_only(sql)
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql, tuple(params or ()))
                columns = [d.name for d in cur.description or ()]
                fetched = cur.fetchmany(ROW_CAP + 1) if cur.description else []
        except Exception as e:
            if any(w in str(e).lower() for w in _WRITE_ERRORS):
                raise ReadOnlyError(
                    f"this SQL server is read-only; the database refused a write ({e})"
                ) from None
            raise
        finally:
            self.conn.rollback()
        return Rows(columns, [tuple(r) for r in fetched[:ROW_CAP]], len(fetched) > ROW_CAP)

    def tables(self) -> list[str]:
        return [
            r[0]
            for r in self.query(
                "SELECT table_schema || '.' || table_name FROM information_schema.tables "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
                None,
            ).rows
        ]


def open_database(dsn: str) -> Database:
    """``sqlite:///path``, ``sqlite:path``, a bare file path, or ``postgres(ql)://...``."""
    if dsn.startswith(("postgres://", "postgresql://")):
        return PostgresDatabase(dsn)
    path = dsn
    for prefix in ("sqlite:///", "sqlite://", "sqlite:"):
        if dsn.startswith(prefix):
            path = dsn[len(prefix) :]
            if prefix == "sqlite:///" and not path.startswith("/"):
                path = "/" + path
            break
    return SqliteDatabase(path)


def build_server(db: Database) -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    server = MCPServer("agen-sql", instructions="Read-only SQL queries.", log_level="WARNING")
    ro = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    @server.tool(annotations=ro)
    def query(sql: str, params: list[Any] | None = None) -> str:
        """Run one read-only SQL query (SELECT/WITH/EXPLAIN/VALUES, or PRAGMA table_info/table_xinfo/
        table_list/index_list/index_info/index_xinfo/foreign_key_list/database_list); at most 500 rows
        come back."""
        try:
            return db.query(sql, params).render()
        except (ReadOnlyError, SqlSyntaxError) as e:
            raise ToolError(str(e)) from None
        except Exception as e:
            raise ToolError(f"query failed: {e}") from None

    @server.tool(annotations=ro)
    def tables() -> str:
        """The tables and views in the database."""
        return "\n".join(db.tables()) or "(no tables)"

    return server


def serve(dsn_env: str = DEFAULT_DSN_ENV) -> None:
    dsn = os.environ.get(dsn_env, "")
    if not dsn:
        raise ValueError(
            f"the SQL server reads its database from ${dsn_env}, which is not set; set it in mcp.json "
            f'"env": {{"{dsn_env}": "sqlite:///path/to.db"}} (or name another variable with --dsn-env)'
        )
    build_server(open_database(dsn)).run()
