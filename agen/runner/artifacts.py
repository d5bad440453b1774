"""Artifacts: named, content-addressed text per namespace, and the tool-result cap.

Saving the same bytes again in a namespace returns the existing row. A tool result
longer than harness.maxToolResultChars is saved (already redacted) as an artifact and the
model gets a preview plus the id and how to read the rest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from agen.errors import BudgetError, InvalidError, NotFoundError
from agen.store.base import Store, Tx

MAX_ARTIFACT_BYTES = 25 * 1024 * 1024
MAX_NAMESPACE_BYTES = 500 * 1024 * 1024
PREVIEW_CHARS = 2000
DEFAULT_PAGE = 16000


def artifact_id(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@dataclass(frozen=True)
class Artifact:
    id: str
    name: str
    media_type: str
    size: int
    created: bool


def save_artifact_tx(
    namespace: str,
    name: str,
    content: str,
    media_type: str = "text/plain",
    task_id: str | None = None,
    run_id: str | None = None,
    max_namespace_bytes: int = MAX_NAMESPACE_BYTES,
) -> object:
    """A Tx function saving an artifact (limits checked inside the transaction)."""
    size = len(content.encode())
    if size > MAX_ARTIFACT_BYTES:
        raise InvalidError(
            f"artifact {name!r} is {size} bytes; the limit is {MAX_ARTIFACT_BYTES} bytes (25 MB)",
            field="content",
        )
    aid = artifact_id(content)

    def fn(tx: Tx) -> Artifact:
        row = tx.one(
            "SELECT name, media_type, size FROM artifacts WHERE namespace = ? AND id = ?",
            (namespace, aid),
        )
        if row is not None:
            return Artifact(aid, str(row["name"]), str(row["media_type"]), int(row["size"]), False)
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
    result: Artifact = await store.write(fn)  # type: ignore[arg-type]
    return result


async def read_artifact(
    store: Store, namespace: str, aid: str, offset: int = 0, length: int = DEFAULT_PAGE
) -> tuple[str, int, int]:
    """(page, total characters, next offset or -1 at the end)."""
    row = await store.one(
        "SELECT substr(content, ?, ?) AS page, length(content) AS total FROM artifacts WHERE namespace = ? AND id = ?",
        (max(0, offset) + 1, max(1, length), namespace, aid),
    )
    if row is None:
        raise NotFoundError(
            f"no artifact {aid} in namespace {namespace!r}; list them with agen artifacts",
            artifact=aid,
        )
    total = int(row["total"])
    end = max(0, offset) + len(row["page"] or "")
    return str(row["page"] or ""), total, (end if end < total else -1)


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
