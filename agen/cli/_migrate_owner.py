"""Who else uses the stores ``agen migrate`` copies: refuse while an ``agen up`` serves the source, or (with
``--drain``) ask it to drain and stop through the same Shutdown RPC as ``agen down``, then hold the stores.

A SQLite store's ``agen up`` is found by its lock file (agen.ownership). A Postgres store has no lock file: an
``agen up`` on it holds the leader lease in the ``leases`` table while it runs and gives it up when it stops.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from agen.cli._common import err
from agen.errors import ConflictError, UnavailableError
from agen.ownership import UpProcess, hold_store_for_copy, release, up_owning_home, up_owning_store
from agen.store.base import now_ms
from agen.store.copy_sides import Side
from agen.store.locate import Location

DRAIN_TIMEOUT_S = 600


def running_up(loc: Location, side: Side | None) -> tuple[UpProcess | None, str | None]:
    """The ``agen up`` serving this store now (its process, if known) and how we know, else (None, None)."""
    from agen.util.home import agen_home, default_store_path

    if loc.path is not None:
        up = up_owning_store(loc.path)
        if up is None and loc.path.expanduser().resolve() == default_store_path().resolve():
            up = up_owning_home(agen_home())
        return up, (up.describe() if up else None)
    if side is None:
        return None, None
    rows = side.rows(
        "SELECT name, holder FROM leases WHERE expires_ms > %s ORDER BY name", (now_ms(),)
    )
    if not rows:
        return None, None
    return None, f"an agen up (lease {rows[0][0]!r} held by {rows[0][1]})"


def refuse_or_drain(loc: Location, side: Side | None, *, drain: bool, dry_run: bool) -> None:
    """Nothing may serve the source while it is copied: refuse, or with ``drain`` stop it and wait."""
    up, who = running_up(loc, side)
    if who is None:
        return
    where = str(loc.path) if loc.path is not None else side.where if side else "the Postgres store"
    if not drain:
        raise ConflictError(
            f"{who} is running on the source store {where}; stop it first with `agen down`"
            + (f" (AGEN_HOME={up.home})" if up and up.home else "")
            + ", or pass --drain to have agen migrate stop it",
            store=str(where),
        )
    if dry_run:
        err(f"agen migrate: --dry-run: would ask {who} to drain and stop first")
        return
    _shutdown(up.home if up else None, who)
    err(f"agen migrate: asked {who} to drain and stop; waiting for it to end")
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while running_up(loc, side)[1] is not None:
        if time.monotonic() > deadline:
            raise UnavailableError(
                f"{who} is still draining after {DRAIN_TIMEOUT_S // 60} minutes; it stops when its runs end. "
                "Run agen migrate again then"
            )
        time.sleep(0.2)


def _shutdown(home: Path | None, who: str) -> None:
    """The Shutdown RPC `agen down` sends, to the ``agen up`` of ``home`` (default: this AGEN_HOME)."""
    import asyncio

    from agen.api import registry as r
    from agen.client import Client
    from agen.local import read_local
    from agen.wire.common import Empty

    local = read_local(home, strict=True)
    if local is None:
        raise UnavailableError(
            f"cannot ask {who} to stop: no local.json in "
            f"{home if home else 'this AGEN_HOME'} names its address; stop it with `agen down` there"
        )

    async def go() -> None:
        async with Client.http(local.url, local.token) as c:
            await c.call(r.Shutdown, Empty())

    asyncio.run(go())


@contextlib.contextmanager
def hold(*locs: Location) -> Iterator[None]:
    """Hold the SQLite stores among ``locs`` exclusively for the copy (Postgres stores have no lock file)."""
    from agen.util.home import agen_home

    held: list[IO[str] | None] = []
    try:
        for loc in locs:
            if loc.path is not None:
                held.append(hold_store_for_copy(loc.path, agen_home()))
        yield
    finally:
        for f in held:
            release(f)
