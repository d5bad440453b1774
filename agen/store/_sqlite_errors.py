"""How the SQLite writer tells a caller's mistake from a store that cannot take writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agen.errors import ConflictError, StoreError


class TransactionLost(Exception):
    """The transaction ended under the batch: every function's changes in it are gone."""


# SQLite result codes that mean the store itself cannot take writes (not the caller's mistake).
_FAULT_CODES = frozenset(
    {
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_NOTADB,
    }
)


def is_fault(e: BaseException | None) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    return isinstance(e, sqlite3.Error) and code is not None and (code & 0xFF) in _FAULT_CODES


def map_error(e: BaseException, path: Path) -> BaseException:
    if isinstance(e, sqlite3.IntegrityError):
        return ConflictError(f"the change conflicts with stored data: {e}", store=str(path))
    if isinstance(e, sqlite3.Error):
        return StoreError(f"store error on {path}: {e}", store=str(path))
    return e
