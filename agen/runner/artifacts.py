"""Artifacts: named, content-addressed text per namespace, and the tool-result cap.

Saving the same bytes again in a namespace returns the existing row. A tool result
longer than harness.maxToolResultChars is saved (already redacted) as an artifact and the
model gets a preview plus the id and how to read the rest.
"""

from __future__ import annotations

import base64
from typing import Any, NamedTuple

from agen.domain.artifacts import (
    MAX_ARTIFACT_BYTES,
    MAX_NAMESPACE_BYTES,
    Artifact,
    artifact_id,
    save_artifact_tx,
    save_files_tx,
)
from agen.domain.attachments import Attachment, file_bytes
from agen.errors import NotFoundError
from agen.runner.context import Msg
from agen.store.base import Store
from agen.store.records import columns

__all__ = [
    "MAX_ARTIFACT_BYTES",
    "MAX_NAMESPACE_BYTES",
    "Artifact",
    "artifact_id",
    "save_artifact_tx",
]
PREVIEW_CHARS = 2000
DEFAULT_PAGE = 16000


class _Page(NamedTuple):
    page: str | None
    total: int


class _File(NamedTuple):
    id: str
    media_type: str
    content: str


async def save_artifact(
    store: Store,
    namespace: str,
    name: str,
    content: str,
    media_type: str = "text/plain",
    task_id: str | None = None,
    run_id: str | None = None,
) -> Artifact:
    fn = save_artifact_tx(namespace, name, content, media_type, task_id, run_id)
    return await store.write(fn)


async def read_artifact(
    store: Store, namespace: str, aid: str, offset: int = 0, length: int = DEFAULT_PAGE
) -> tuple[str, int, int]:
    """(page, total characters, next offset or -1 at the end)."""
    row = await store.row(
        _Page,
        "SELECT substr(content, ?, ?) AS page, length(content) AS total FROM artifacts WHERE namespace = ? AND id = ?",
        (max(0, offset) + 1, max(1, length), namespace, aid),
    )
    if row is None:
        raise NotFoundError(
            f"no artifact {aid} in namespace {namespace!r}; list them with agen artifacts",
            artifact=aid,
        )
    page, total = row.page or "", row.total
    end = max(0, offset) + len(page)
    return page, total, (end if end < total else -1)


async def cap_result(
    store: Store,
    namespace: str,
    tool: str,
    content: str,
    max_chars: int,
    task_id: str | None,
    run_id: str | None,
) -> tuple[str, str | None]:
    """The content the model gets for an (already redacted) result, and the artifact id if it was capped."""
    if max_chars <= 0 or len(content) <= max_chars:
        return content, None
    art = await save_artifact(
        store, namespace, f"{tool} result", content, "text/plain", task_id, run_id
    )
    preview = content[: min(PREVIEW_CHARS, max_chars // 2)]
    note = (
        f"\n[result truncated: {len(content)} characters; the full result is artifact {art.id}. "
        f'Read the rest with read_artifact {{"id": "{art.id}", "offset": {len(preview)}}}]'
    )
    return preview + note, art.id


async def load_files(store: Store, namespace: str, msgs: list[Msg]) -> None:
    """Read the bytes of the files messages were given with (``Msg.files``, base64), so the model
    is sent them again on a resumed run or a later turn. A file no longer stored (its artifact was
    deleted) becomes a line saying so."""
    wanted = {a.id for m in msgs for a in m.attachments or []}
    if not wanted:
        return
    marks = ",".join("?" * len(wanted))
    rows = await store.rows(
        _File,
        f"SELECT {columns(_File)} FROM artifacts WHERE namespace = ? AND id IN ({marks})",
        (namespace, *sorted(wanted)),
    )
    found = {r.id: file_bytes(r.media_type, r.content) for r in rows}
    for m in msgs:
        if not m.attachments:
            continue
        m.files = []
        for a in m.attachments:
            data = found.get(a.id)
            if data is None:
                gone = f"(the attached file {a.name} is no longer stored: its artifact {a.id} was deleted)"
                m.files.append(
                    file_dict(a.model_copy(update={"media_type": "text/plain"}), gone.encode())
                )
            else:
                m.files.append(file_dict(a, data))


def file_dict(a: Attachment, data: bytes) -> dict[str, Any]:
    """A file as the request messages carry it (providers.base.ATTACHMENTS_KEY)."""
    return {
        "name": a.name,
        "media_type": a.media_type,
        "size": len(data),
        "data": base64.b64encode(data).decode(),
    }


async def save_files(
    store: Store, namespace: str, files: list[tuple[str, bytes, str | None]]
) -> list[Attachment]:
    """Store files given with a run's input (SDK); their references for RunRequest.attachments."""
    return await store.write(lambda tx: save_files_tx(tx, namespace, files))
