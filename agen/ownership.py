"""Who runs the Hub on a home and on a store file: one ``agen up``, or any number of one-shots.

Two flocks decide it, by the running process rather than by whether it answers HTTP:

- ``AGEN_HOME/up.lock``: held exclusively by the home's ``agen up`` for its life (a stopped or
  busy one still holds it); it holds ``{"pid", "home"}``.
- ``<store file>.lock`` next to the SQLite file: ``agen up`` holds it exclusively (so a second
  ``agen up`` from another home with ``--store`` on the same file is refused, naming the first),
  an embedded one-shot ``agen run`` holds it shared (one-shots of different deployments run side
  by side; an ``agen up`` that starts meanwhile waits until they end).

A flock goes with its process, so a SIGKILLed holder never leaves a stale lock behind.

A Postgres store has no file here and takes several Hubs, so it has no store lock: only ``up.lock``
applies, and the database protects itself (row and key locks, SKIP LOCKED leasing, the fenced leader
lease; docs/postgres.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from agen.errors import ConflictError
from agen.util.home import make_private_dir


@dataclass(frozen=True)
class UpProcess:
    """A running ``agen up`` as its lock file names it."""

    pid: int | None
    home: Path | None

    def describe(self) -> str:
        return f"agen up (pid {self.pid if self.pid is not None else '?'}" + (
            f", AGEN_HOME {self.home})" if self.home else ")"
        )


def store_lock_path(db: Path) -> Path | None:
    """The lock file beside a SQLite store file; None for an in-memory store (nothing to share)."""
    if str(db) in ("", ":memory:"):
        return None
    db = db.expanduser().resolve()  # one lock per file, however its path is spelled
    return db.with_name(db.name + ".lock")


def _open(path: Path) -> IO[str]:
    make_private_dir(
        path.parent
    )  # often the first thing made in a new AGEN_HOME: it must be 0700 too
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    return os.fdopen(fd, "r+")


def _try(f: IO[str], how: int) -> bool:
    try:
        fcntl.flock(f, how | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _holder(path: Path) -> UpProcess:
    try:
        data = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        data = {}
    pid = data.get("pid") if isinstance(data, dict) else None
    home = data.get("home") if isinstance(data, dict) else None
    return UpProcess(
        pid=pid if isinstance(pid, int) else None,
        home=Path(home) if isinstance(home, str) else None,
    )


def claim(f: IO[str], home: Path) -> None:
    """Write this process into a lock file it holds exclusively, for others to name it."""
    f.seek(0)
    f.truncate()
    f.write(json.dumps({"pid": os.getpid(), "home": str(home)}) + "\n")
    f.flush()


def up_owning_home(home: Path) -> UpProcess | None:
    """The ``agen up`` that holds ``home/up.lock`` now (running, busy or stopped), else None."""
    path = home / "up.lock"
    if not path.exists():
        return None
    with _open(path) as f:
        if _try(f, fcntl.LOCK_SH):
            return None  # closing the file drops the probe at once
    return _holder(path)


def up_owning_store(db: Path) -> UpProcess | None:
    """The ``agen up`` that holds the store's lock exclusively, else None (free, or only one-shots)."""
    path = store_lock_path(db)
    if path is None or not path.exists():
        return None
    with _open(path) as f:
        if _try(f, fcntl.LOCK_SH):
            return None
    return _holder(path)


def hold_store_for_oneshot(db: Path) -> IO[str] | None:
    """Share the store with other one-shots until the returned file is closed; None when an
    ``agen up`` holds it (the one-shot must submit to it instead of running a Hub beside it)."""
    path = store_lock_path(db)
    if path is None:
        return None
    f = _open(path)
    if _try(f, fcntl.LOCK_SH):
        return f
    f.close()
    return None


def hold_store_for_up(db: Path, home: Path, on_wait: Callable[[str], None]) -> IO[str] | None:
    """Hold the store exclusively for this ``agen up``'s life.

    Another ``agen up`` on the same file is refused, naming it. One-shot ``agen run``s using the
    store are waited for (``on_wait`` says so once): they end on their own, and a Hub must not
    start beside them.
    """
    path = store_lock_path(db)
    if path is None:
        return None
    f = _open(path)
    if not _try(f, fcntl.LOCK_EX):
        if not _try(f, fcntl.LOCK_SH):
            f.close()
            other = _holder(path)
            raise ConflictError(
                f"{other.describe()} already serves the store {db}; two Hubs on one store would share its "
                "Nest and double its instances. Use that one, or stop it with `agen down`"
                + (f" (AGEN_HOME={other.home})" if other.home else ""),
                store=str(db),
                pid=other.pid,
            )
        fcntl.flock(f, fcntl.LOCK_UN)
        on_wait(
            f"agen up: a one-shot `agen run` is using the store {db}; starting when it ends "
            "(Ctrl-C to stop waiting)"
        )
        try:
            fcntl.flock(f, fcntl.LOCK_EX)
        except BaseException:
            f.close()
            raise
    claim(f, home)
    return f


def release(f: IO[str] | None) -> None:
    if f is not None:
        with contextlib.suppress(OSError):
            f.close()


def hold_store_for_copy(db: Path, home: Path) -> IO[str] | None:
    """Hold the store exclusively while ``agen migrate`` copies it or into it: an ``agen up`` or one-shot
    that starts meanwhile is refused or waits, instead of changing rows the copy has already read."""
    path = store_lock_path(db)
    if path is None:
        return None
    f = _open(path)
    if not _try(f, fcntl.LOCK_EX):
        f.close()
        other = _holder(path)
        raise ConflictError(
            f"{other.describe()} is using the store {db}; stop it with `agen down`"
            + (f" (AGEN_HOME={other.home})" if other.home else "")
            + ", or let the one-shot `agen run` end, then migrate",
            store=str(db),
            pid=other.pid,
        )
    claim(f, home)
    return f
