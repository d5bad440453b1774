"""Where agen keeps its files: ``AGEN_HOME`` (default ``~/.agen``)."""

from __future__ import annotations

import os
from pathlib import Path


def agen_home() -> Path:
    return Path(os.environ.get("AGEN_HOME") or Path.home() / ".agen").expanduser()


def default_store_path() -> Path:
    return agen_home() / "agen.db"


def write_private(path: Path, text: str) -> None:
    """Write a file that holds credentials: created 0600 before any byte is written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
