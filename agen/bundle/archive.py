"""Content-addressed definitions: a bundle's files packed in one deterministic archive.

The archive is the digest's own framing (sorted UTF-8 paths, ``path 0x00 u64le(len) bytes``)
behind a magic header, so packing the same files always gives the same bytes and a
stored definition can be checked against its digest when it is unpacked. It lives with the
bundle so the Hub (which stores it) and a Nest's host process (which reads it) share it.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from agen.bundle.digest import digest_files
from agen.errors import StoreError

MAGIC = b"AGENDEF1\n"


def pack(files: Mapping[str, bytes]) -> bytes:
    parts = [MAGIC]
    for path, data in sorted((p.encode("utf-8"), d) for p, d in files.items()):
        parts += [path, b"\x00", struct.pack("<Q", len(data)), data]
    return b"".join(parts)


def unpack(blob: bytes, *, expect_digest: str | None = None) -> dict[str, bytes]:
    """The files map of an archive; refuses a truncated archive or one that fails its digest."""
    if not blob.startswith(MAGIC):
        raise StoreError("stored definition is not an agen definition archive; redeploy the bundle")
    files: dict[str, bytes] = {}
    pos, end = len(MAGIC), len(blob)
    while pos < end:
        nul = blob.index(b"\x00", pos)
        path = blob[pos:nul].decode("utf-8")
        (size,) = struct.unpack_from("<Q", blob, nul + 1)
        start = nul + 9
        if start + size > end:
            raise StoreError(
                f"stored definition archive is truncated at {path}; redeploy the bundle"
            )
        files[path] = blob[start : start + size]
        pos = start + size
    if expect_digest is not None and digest_files(files) != expect_digest:
        raise StoreError(
            f"stored definition does not match its digest {expect_digest}; redeploy the bundle"
        )
    return files
