"""Where agen keeps its files: ``AGEN_HOME`` (default ``~/.agen``), private to the user who runs agen.

The home holds every transcript (the store) and the admin token (local.json), so it is made 0700 and its
files 0600; a home made by an older agen or by hand with looser modes gets a one-line warning with the fix.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("agen.home")
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
_warned: set[str] = set()


def agen_home() -> Path:
    return Path(os.environ.get("AGEN_HOME") or Path.home() / ".agen").expanduser()


def default_store_path() -> Path:
    return agen_home() / "agen.db"


def make_private_dir(path: Path) -> None:
    """Create ``path`` and every missing parent 0700 (``agen nest run`` makes AGEN_HOME and ``nests/``
    on its way to its data folder); an existing directory is left as it is."""
    if path.is_dir():
        return
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=PRIVATE_DIR, exist_ok=True)


def write_private(path: Path, text: str) -> None:
    """Write a file that holds credentials: created 0600 before any byte is written."""
    make_private_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, PRIVATE_FILE)
    os.replace(tmp, path)


def prepare_store_file(path: Path) -> None:
    """Before SQLite opens ``path``: a new store file is created empty and 0600 (SQLite gives its -wal and -shm
    files the same mode); a store (new or not) that others can read, or that sits in a home they can read, is reported once, with the
    command that fixes it."""
    make_private_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    warn_if_shared(path)  # a new store in a hand-made 0755 home is readable by others too


def shared_with_others(path: Path) -> tuple[list[Path], bool]:
    """(what other users can read of the store ``path``, its -wal/-shm and the AGEN_HOME holding it;
    whether it is in AGEN_HOME): for the warning below and ``agen doctor``."""
    loose = [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if _mode(p) & 0o077]
    home = agen_home()
    in_home = path.parent.resolve() == home.resolve() if home.exists() else False
    if in_home and _mode(home) & 0o077:
        loose.insert(0, home)
    return loose, in_home


def warn_if_shared(path: Path) -> None:
    """One warning per store if it, its -wal/-shm, or the AGEN_HOME holding it can be read by other users."""
    loose, in_home = shared_with_others(path)
    key = str(path)
    if not loose or key in _warned:
        return
    _warned.add(key)
    where = ", ".join(f"{p} (mode {_mode(p):04o})" for p in loose)
    fix = f"chmod 700 {path.parent} && chmod 600 {path}*" if in_home else f"chmod 600 {path}*"
    log.warning("agen: other local users can read %s; fix: %s", where, fix)


def _mode(p: Path) -> int:
    try:
        return stat.S_IMODE(p.stat().st_mode)
    except OSError:
        return 0
