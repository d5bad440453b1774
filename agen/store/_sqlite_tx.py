"""The writer's and readers' ``Tx``: statements on one connection, valid inside one transaction function."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agen.store.base import Params, Row, dumps, new_ulid, now_ms
from agen.store.records import R, read, read_all

_EVENT_SQL = (
    "INSERT INTO events (id, namespace, type, severity, deployment, task_id, run_id, labels, data, dedupe_key,"
    " created_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING"
)


def dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> Row:
    return {d[0]: v for d, v in zip(cursor.description, row, strict=True)}


class SQLiteTx:
    """Tx over the writer's connection; valid only inside one transaction function."""

    __slots__ = ("_callbacks", "_conn", "max_event_seq", "now_ms")
    dialect = "sqlite"
    row_lock = ""  # the one writer decides alone

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.now_ms = now_ms()
        self.max_event_seq = 0
        self._callbacks: list[Callable[[], None]] = []

    def execute(self, sql: str, params: Params = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        self._conn.executemany(sql, rows)

    def one(self, sql: str, params: Params = ()) -> Row | None:
        cur = self._conn.execute(sql, params)
        row = cur.fetchone()
        return None if row is None else dict_row(cur, row)

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        cur = self._conn.execute(sql, params)
        return [dict_row(cur, r) for r in cur.fetchall()]

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self._conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def row(self, row_type: type[R], sql: str, params: Params = ()) -> R | None:
        found = self.one(sql, params)
        return None if found is None else read(row_type, found)

    def rows(self, row_type: type[R], sql: str, params: Params = ()) -> list[R]:
        return read_all(row_type, self.all(sql, params))

    def event(
        self,
        namespace: str,
        type: str,
        *,
        severity: str = "info",
        deployment: str | None = None,
        task_id: str | None = None,
        run_id: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        data: Mapping[str, Any] | None = None,
        dedupe_key: str | None = None,
    ) -> int | None:
        cur = self._conn.execute(
            _EVENT_SQL,
            (
                new_ulid(),
                namespace,
                type,
                severity,
                deployment,
                task_id,
                run_id,
                labels if isinstance(labels, str) else dumps(dict(labels)) if labels else "{}",
                dumps(dict(data)) if data else "{}",
                dedupe_key,
                self.now_ms,
            ),
        )
        if cur.rowcount == 0:
            return None
        seq: int = cur.lastrowid or 0
        if seq > self.max_event_seq:
            self.max_event_seq = seq
        return seq

    def after_commit(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)
