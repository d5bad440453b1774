"""The Store: where every durable thing agen knows lives (SQLite locally, Postgres later)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agen.errors import InvalidError
from agen.store.base import Row, Store, Tx, dumps, loads, new_ulid, now_ms
from agen.store.sqlite import SQLiteStore

__all__ = [
    "Row",
    "SQLiteStore",
    "Store",
    "Tx",
    "dumps",
    "loads",
    "new_ulid",
    "now_ms",
    "open_store",
    "store_path",
]


def store_path(url: str | None) -> Path:
    """The SQLite file a store URL names (``sqlite:<path>``, a bare path, or the default: see agen.store.locate)."""
    from agen._home import default_store_path
    from agen.store.locate import resolve_store_url

    url = resolve_store_url(url)
    if not url:
        return default_store_path()
    if url.startswith("sqlite:"):
        return Path(url.removeprefix("sqlite:").removeprefix("//")).expanduser()
    if "://" in url:
        scheme = url.split("://", 1)[0]
        raise InvalidError(
            f"store URL {url!r}: the {scheme} store is not available in this build; "
            "use a SQLite path or sqlite:<path>",
            field="store",
        )
    return Path(url).expanduser()


async def open_store(url: str | None = None, **kwargs: Any) -> Store:
    """Open the store a URL names; default: the SQLite file in AGEN_HOME."""
    return await SQLiteStore.open(store_path(url), **kwargs)
