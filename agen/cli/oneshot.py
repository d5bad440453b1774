"""Where ``agen run`` (no --hub) sends its task: the ``agen up`` that owns this home or store, or an
embedded Hub of its own.

The running process decides (agen.ownership), not a quick HTTP probe: an ``agen up`` that is busy,
restarting or stopped (SIGSTOP) still owns its store, so the one-shot waits for it to answer
(saying so on stderr) and fails with exit 3 once --timeout runs out. It never starts a second Hub
on that store, which would void the first one's leases and run its work in the CLI process.

On a Postgres store only this home's ``agen up`` counts: several Hubs may share one database, so with none
running here the one-shot runs its own scoped Hub beside any others (whichever Nest leases the task runs it,
once).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from agen.local import LocalConfig

NOT_ANSWERING_AFTER_S = 5.0  # quiet this long before saying the agen up does not answer
POLL_S = 0.2


@dataclass
class LocalHub:
    """Submit over HTTP to ``up``; or, when ``up`` is None, run embedded (holding ``lock``, the store's
    shared lock, until the run ends)."""

    up: LocalConfig | None = None
    lock: IO[str] | None = None


def local_hub(timeout_ms: int, *, say: Callable[[str], None] | None = None) -> LocalHub:
    """Wait (up to ``timeout_ms``; 0 = no limit) for the owning ``agen up`` to answer, or take the store."""
    from agen.cli._common import err
    from agen.cli.submit import hub_is_live
    from agen.errors import UnavailableError
    from agen.local import read_local
    from agen.ownership import (
        hold_store_for_oneshot,
        store_lock_path,
        up_owning_home,
        up_owning_store,
    )
    from agen.store import store_file
    from agen.util.home import agen_home

    say = say or err
    home, db = agen_home(), store_file(None)
    if db is not None and store_lock_path(db) is None:
        return LocalHub()
    started = time.monotonic()
    deadline = None if timeout_ms == 0 else started + timeout_ms / 1000
    told = False
    while True:
        owner = up_owning_home(home)
        if owner is None:
            if (
                db is None
            ):  # a Postgres store: Hubs may share it, so the one-shot runs one of its own
                return LocalHub()
            lock = hold_store_for_oneshot(db)
            if lock is not None:
                return LocalHub(lock=lock)
            owner = up_owning_store(db)
            if owner is None:
                continue  # it stopped between the two looks: decide again
        local = read_local(owner.home or home)
        mine = local is not None and (owner.pid is None or local.pid == owner.pid)
        if local is not None and mine and hub_is_live(local.url, local.ca_hash):
            return LocalHub(up=local)
        where = (
            f"at {local.url}"
            if local is not None and mine
            else "(it has not written local.json yet)"
        )
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            raise UnavailableError(
                f"{owner.describe()} owns this store but did not answer {where} within "
                f"{(now - started):.0f}s; the task was not submitted. Check that process (is it stopped or "
                "overloaded?), or stop it (`agen down`) and run again",
                pid=owner.pid,
            )
        if not told and now - started >= NOT_ANSWERING_AFTER_S:
            say(f"{owner.describe()} is not answering {where}; waiting… (Ctrl-C to stop waiting)")
            told = True
        time.sleep(POLL_S)
