"""The definition digest (seed 000 §9, exact; shared golden vector with other implementations).

Files are keyed by /-separated bundle-relative path; ignored paths are skipped; the rest are
hashed in UTF-8 byte order of path as ``path || 0x00 || u64le(len) || bytes`` with SHA-256.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from collections.abc import Mapping
from pathlib import Path

from agen.errors import BundleError

IGNORED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})
IGNORED_NAMES = frozenset({".DS_Store"})
IGNORED_SUFFIXES = ("~", ".swp", ".pyc")


def is_ignored(path: str) -> bool:
    """True when a bundle-relative path is left out of the digest (at any depth)."""
    *dirs, name = path.split("/")
    if any(d in IGNORED_DIRS for d in dirs):
        return True
    return name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES)


def digest_files(files: Mapping[str, bytes]) -> str:
    """``sha256:<hex>`` over the non-ignored files of a bundle given as path -> bytes."""
    h = hashlib.sha256()
    keyed = sorted(
        (path.encode("utf-8"), data) for path, data in files.items() if not is_ignored(path)
    )
    for path, data in keyed:
        h.update(path)
        h.update(b"\x00")
        h.update(struct.pack("<Q", len(data)))
        h.update(data)
    return "sha256:" + h.hexdigest()


def digest_dir(path: str | os.PathLike[str]) -> str:
    return digest_files(walk_bundle(path))


def definition_id(name: str, digest: str) -> str:
    """What a deployment runs: ``name@sha256:<hex>``."""
    return f"{name}@{digest}"


def walk_bundle(path: str | os.PathLike[str]) -> dict[str, bytes]:
    """Every non-ignored file under a bundle folder, keyed by /-separated relative path.

    Symlinks are followed only while they stay inside the bundle; one that points outside,
    or a directory loop, is refused (a bundle must be self-contained to be stored and shipped).
    """
    root = Path(path)
    if not root.is_dir():
        reason = "not a directory" if root.exists() else "does not exist"
        raise BundleError(
            f"{root}: not a bundle folder",
            [f"{root}: (file): {reason}; point at a bundle folder (see agen init)"],
        )
    real_root = root.resolve()
    files: dict[str, bytes] = {}
    _walk(root, "", real_root, {real_root}, files)
    return files


def _walk(
    folder: Path, prefix: str, real_root: Path, active: set[Path], out: dict[str, bytes]
) -> None:
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            rel = f"{prefix}{entry.name}"
            if is_ignored(rel) or (entry.is_dir() and entry.name in IGNORED_DIRS):
                continue
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                raise BundleError(
                    f"{folder}: a file name is not valid UTF-8",
                    [f"{rel!r}: (file): file names must be valid UTF-8; rename it"],
                ) from None
            target = Path(entry.path)
            if entry.is_symlink():
                real = target.resolve()
                if real != real_root and real_root not in real.parents:
                    raise BundleError(
                        f"{rel}: symlink points outside the bundle",
                        [
                            f"{rel}: (file): symlink to {real} leaves the bundle; copy the file in instead"
                        ],
                    )
            if entry.is_dir():
                real = target.resolve()
                if real in active:
                    raise BundleError(f"{rel}: directory loop", [f"{rel}: (file): symlink loop"])
                _walk(target, rel + "/", real_root, active | {real}, out)
            elif entry.is_file():
                out[rel] = target.read_bytes()
            else:  # never read it: a FIFO blocks the reader, a device or socket is not bundle content
                kind = _special_kind(target)
                raise BundleError(
                    f"{rel}: not a regular file ({kind})",
                    [
                        f"{rel}: (file): is a {kind}, not a regular file; a bundle holds only files and folders, remove it"
                    ],
                )


def _special_kind(path: Path) -> str:
    """What a non-regular directory entry is, in words."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "broken symlink"
    for test, name in (
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return "special file"
