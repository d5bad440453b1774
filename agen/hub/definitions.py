"""Content-addressed definitions: a bundle's files packed in one deterministic archive.

The archive is the digest's own framing (sorted UTF-8 paths, ``path 0x00 u64le(len) bytes``)
behind a magic header, so packing the same files always gives the same bytes and a
stored definition can be checked against its digest when it is unpacked (agen.bundle.archive).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from agen.bundle.archive import MAGIC, pack, unpack
from agen.errors import NotFoundError
from agen.store import Store, Tx

__all__ = ["MAGIC", "get_definition_files", "pack", "put_definition", "unpack"]


def put_definition(tx: Tx, name: str, digest: str, files: Mapping[str, bytes]) -> str:
    """Store a definition once (idempotent by id); returns its id ``name@sha256:...``."""
    def_id = f"{name}@{digest}"
    blob = pack(files)
    tx.execute(
        "INSERT INTO definitions (id, name, digest, files, size, created_ms) VALUES (?,?,?,?,?,?)"
        " ON CONFLICT (id) DO NOTHING",
        (def_id, name, digest, blob, len(blob), tx.now_ms),
    )
    return def_id


class _Packed(NamedTuple):
    digest: str
    files: bytes  # the archive (pack)


async def get_definition_files(store: Store, definition_id: str) -> dict[str, bytes]:
    row = await store.row(
        _Packed, "SELECT digest, files FROM definitions WHERE id = ?", (definition_id,)
    )
    if row is None:
        raise NotFoundError(
            f"definition {definition_id} is not in the store", definition=definition_id
        )
    return unpack(bytes(row.files), expect_digest=row.digest)
