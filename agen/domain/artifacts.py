"""Saving an artifact: named, content-addressed content per namespace, with its limits.

The engine saves tool results and agent files this way (agen.runner.artifacts), the Hub the files a
task is submitted with (agen.domain.attachments): one insert, one set of limits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import NamedTuple

from agen.domain.attachments import Attachment, check_files, stored_text
from agen.errors import BudgetError, InvalidError
from agen.store.base import Tx
from agen.store.records import columns

MAX_ARTIFACT_BYTES = 25 * 1024 * 1024
MAX_NAMESPACE_BYTES = 500 * 1024 * 1024


def artifact_id(content: str | bytes) -> str:
    data = content.encode() if isinstance(content, str) else content
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Artifact:
    id: str
    name: str
    media_type: str
    size: int
    created: bool


class _Saved(NamedTuple):
    """An artifact already stored with the same content."""

    name: str
    media_type: str
    size: int


def save_artifact_tx(
    namespace: str,
    name: str,
    content: str,
    media_type: str = "text/plain",
    task_id: str | None = None,
    run_id: str | None = None,
    max_namespace_bytes: int = MAX_NAMESPACE_BYTES,
    *,
    aid: str | None = None,
) -> Callable[[Tx], Artifact]:
    """A Tx function saving an artifact (limits checked inside the transaction). ``aid``: the id when
    the stored text is not the content itself (a file's bytes stored as base64 keep the id of the
    bytes)."""
    size = len(content.encode())
    if size > MAX_ARTIFACT_BYTES:
        raise InvalidError(
            f"artifact {name!r} is {size} bytes; the limit is {MAX_ARTIFACT_BYTES} bytes (25 MB)",
            field="content",
        )
    aid = aid or artifact_id(content)

    def fn(tx: Tx) -> Artifact:
        row = tx.row(
            _Saved,
            f"SELECT {columns(_Saved)} FROM artifacts WHERE namespace = ? AND id = ?",
            (namespace, aid),
        )
        if row is not None:
            return Artifact(aid, row.name, row.media_type, row.size, False)
        used = int(
            tx.scalar(
                "SELECT COALESCE(SUM(size), 0) FROM artifacts WHERE namespace = ?", (namespace,)
            )
            or 0
        )
        if used + size > max_namespace_bytes:
            raise BudgetError(
                f"namespace {namespace!r} holds {used} bytes of artifacts; saving {size} more would pass the "
                f"{max_namespace_bytes}-byte limit (500 MB). Delete old artifacts first.",
                namespace=namespace,
            )
        tx.execute(
            "INSERT INTO artifacts (namespace, id, name, media_type, size, content, task_id, run_id, created_ms)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (namespace, aid, name, media_type, size, content, task_id, run_id, tx.now_ms),
        )
        return Artifact(aid, name, media_type, size, True)

    return fn


def save_files_tx(
    tx: Tx,
    namespace: str,
    files: list[tuple[str, bytes, str | None]],
    *,
    task_id: str | None = None,
    run_id: str | None = None,
) -> list[Attachment]:
    """Check and store files as artifacts in ``tx``; their references, in order."""
    kinds = check_files(files)
    out = []
    for (name, data, _), kind in zip(files, kinds, strict=True):
        aid = artifact_id(data)
        save_artifact_tx(namespace, name, stored_text(kind, data), kind, task_id, run_id, aid=aid)(
            tx
        )
        out.append(
            Attachment(id=aid, name=PurePath(name).name or name, media_type=kind, size=len(data))
        )
    return out
