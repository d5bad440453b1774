"""Which store a command uses: one resolution every command shares.

The order: an explicit URL (``--store``), then ``AGEN_STORE``, then the pointer file ``AGEN_HOME/store.json``
(written by ``agen migrate`` so the next ``agen up`` follows the data it moved), then the SQLite file
``AGEN_HOME/agen.db``. The pointer may hold a Postgres password, so it is written 0600 like local.json.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from agen.errors import InvalidError

ENV_STORE = "AGEN_STORE"
POINTER_NAME = "store.json"


def home_pointer() -> Path:
    from agen.util.home import agen_home

    return agen_home() / POINTER_NAME


def resolve_store_url(url: str | None = None) -> str | None:
    """The store URL to open, or None for the default SQLite file in AGEN_HOME."""
    if url:
        return url
    env = os.environ.get(ENV_STORE, "").strip()
    if env:
        return env
    pointer = home_pointer()
    try:
        text = pointer.read_text()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InvalidError(
            f"{pointer}: cannot read the store pointer ({e.strerror})", field="store"
        ) from e
    try:
        data = json.loads(text)
        pointed = data["url"]
        if not isinstance(pointed, str) or not pointed:
            raise TypeError
    except (ValueError, KeyError, TypeError) as e:
        raise InvalidError(
            f'{pointer}: not a store pointer (expected {{"url": "<store URL>"}}); '
            "fix or delete it to use the SQLite store in AGEN_HOME",
            field="store",
        ) from e
    return pointed


def point_home_at(url: str | None, *, migrated_from: str | None = None) -> None:
    """Make later commands in this AGEN_HOME use ``url``; None removes the pointer (back to the default).
    ``migrated_from`` records the store ``agen migrate`` copied it from, so the same migrate run again
    knows its source and verifies the two again."""
    from agen.util.home import write_private

    pointer = home_pointer()
    if url is None:
        pointer.unlink(missing_ok=True)
        return
    data = {"url": url} | ({"migrated_from": migrated_from} if migrated_from else {})
    write_private(pointer, json.dumps(data) + "\n")


def migrated_from(url: str) -> str | None:
    """The store ``agen migrate`` copied ``url`` from, when AGEN_HOME's pointer names ``url`` and says."""
    try:
        data = json.loads(home_pointer().read_text())
    except (OSError, ValueError):
        return None
    source = data.get("migrated_from") if isinstance(data, dict) else None
    return source if data.get("url") == url and isinstance(source, str) and source else None


POSTGRES_SCHEMES = ("postgres://", "postgresql://")


def is_postgres_url(url: str | None) -> bool:
    """Whether ``url`` names a PostgreSQL store (``postgres://`` or ``postgresql://``, in any case)."""
    return url is not None and url.lower().startswith(POSTGRES_SCHEMES)


@dataclass(frozen=True)
class Location:
    """A store a URL names: a SQLite file (``path``) or a Postgres database (``url``)."""

    dialect: str  # "sqlite" or "postgres"
    path: Path | None = None
    url: str = ""

    @property
    def store_url(self) -> str:
        """The URL later commands open it by (``sqlite:`` with an absolute path)."""
        return f"sqlite:{self.path.expanduser().resolve()}" if self.path is not None else self.url


def locate(url: str) -> Location:
    """The one reading of a store URL, for every command: ``postgres://…``/``postgresql://…`` (a URL
    scheme is case-insensitive; libpq reads only the lower-case one, so that is what it is given),
    ``sqlite:PATH`` (or ``sqlite://PATH``), or a bare path to a SQLite file. Any other scheme is an
    InvalidError naming the ones agen knows."""
    if is_postgres_url(url):
        scheme, rest = url.split("://", 1)
        return Location("postgres", url=f"{scheme.lower()}://{rest}")
    if url[:7].lower() == "sqlite:":
        return Location("sqlite", path=Path(url[7:].removeprefix("//")).expanduser())
    if "://" in url:
        raise InvalidError(
            f"store URL {redact_url(url)!r}: the {url.split('://', 1)[0]} store is not supported; "
            "use a SQLite path, sqlite:<path> or postgresql://…",
            field="store",
        )
    return Location("sqlite", path=Path(url).expanduser())


def redact_url(url: str) -> str:
    """``url`` as it may be shown (banner, errors, logs): a password in the user part or in a ``password=``
    query parameter becomes ``***``; everything else (host, port, database, socket folder) stays, so the
    reader can still tell which store it is."""
    import urllib.parse

    if "://" not in url:
        return url
    try:
        parts = urllib.parse.urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            userinfo, _, hostport = netloc.rpartition("@")
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}:***@{hostport}"
        query = parts.query
        if query:
            pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
            if any(k.lower() == "password" for k, _ in pairs):
                query = urllib.parse.urlencode(
                    [(k, "***" if k.lower() == "password" else v) for k, v in pairs], safe="/*"
                )
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return url.split("://", 1)[0] + "://***"
