"""The Store: where every durable thing agen knows lives (SQLite locally, or a PostgreSQL database)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agen.errors import InvalidError
from agen.store.base import LIVE_PAYLOAD_BYTES, Row, Store, Tx, dumps, loads, new_ulid, now_ms
from agen.store.locate import locate, redact_url, resolve_store_url
from agen.store.sqlite import SQLiteStore

__all__ = [
    "LIVE_PAYLOAD_BYTES",
    "Row",
    "SQLiteStore",
    "Store",
    "Tx",
    "dumps",
    "loads",
    "new_ulid",
    "now_ms",
    "open_store",
    "store_file",
    "store_path",
]


def store_file(url: str | None) -> Path | None:
    """The SQLite file a store URL names (``sqlite:<path>``, a bare path, or the default: see
    agen.store.locate); None for a PostgreSQL store, which is no file on this machine."""
    url = resolve_store_url(url)
    if not url:
        return store_path(None)
    return locate(url).path


def store_path(url: str | None) -> Path:
    """The SQLite file a store URL names; a URL of any other engine is refused here."""
    from agen.util.home import default_store_path

    url = resolve_store_url(url)
    if not url:
        return default_store_path()
    path = locate(url).path
    if path is None:
        raise InvalidError(
            f"store URL {redact_url(url)!r}: a PostgreSQL store, not a SQLite file", field="store"
        )
    return path


async def open_store(url: str | None = None, **kwargs: Any) -> Store:
    """Open the store a URL names (``postgres://``/``postgresql://`` or SQLite); default: the SQLite file in
    AGEN_HOME."""
    resolved = resolve_store_url(url)
    where = locate(resolved) if resolved else None
    if where is None or where.path is not None:
        return await SQLiteStore.open(store_path(resolved), **kwargs)
    try:
        from agen.store.postgres import PostgresStore
    except ImportError:
        raise InvalidError(
            f"store URL {redact_url(where.url)!r} needs the Postgres driver: "
            "pip install 'agen[postgres]' (psycopg and psycopg-pool)",
            field="store",
        ) from None
    return await PostgresStore.open(where.url, **kwargs)
