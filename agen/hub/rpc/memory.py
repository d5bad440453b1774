"""Memory and artifact RPCs: people see, set and roll back memory blocks (every write is a
version with its author) and read the artifacts agents saved. Reads need viewer, writes operator;
every request is held to the caller's namespaces."""

from __future__ import annotations

from typing import NamedTuple

from agen.domain import columns
from agen.domain import memory as mem
from agen.errors import InvalidError, NotFoundError
from agen.hub.auth import Principal
from agen.hub.service import Hub
from agen.store import Tx
from agen.wire.memory import (
    Artifact,
    GetArtifactRequest,
    GetArtifactResponse,
    GetMemoryRequest,
    ListArtifactsRequest,
    ListArtifactsResponse,
    ListMemoryRequest,
    ListMemoryResponse,
    MemoryBlock,
    MemoryBlockResponse,
    MemoryBlockSummary,
    MemoryHistoryRequest,
    MemoryHistoryResponse,
    MemoryVersion,
    RollbackMemoryRequest,
    SetMemoryRequest,
)

_LAST_AUTHOR = (
    "(SELECT author_kind FROM memory_versions v WHERE v.namespace = b.namespace AND v.block_id = b.id"
    " AND v.version = b.version) AS author_kind, (SELECT author FROM memory_versions v"
    " WHERE v.namespace = b.namespace AND v.block_id = b.id AND v.version = b.version) AS author"
)


class _Block(NamedTuple):
    """A memory block as it is now, and who wrote its current version (``_LAST_AUTHOR``)."""

    namespace: str
    id: str
    label: str
    title: str | None
    description: str | None
    value: str
    limit_chars: int
    version: int
    updated_ms: int
    author_kind: str | None
    author: str | None


class _Summary(NamedTuple):
    """A memory block without its value: its length (``chars``) instead."""

    namespace: str
    id: str
    label: str
    title: str | None
    description: str | None
    chars: int
    limit_chars: int
    version: int
    updated_ms: int
    author_kind: str | None
    author: str | None


class _Version(NamedTuple):
    """One row of ``memory_versions``: a block as one write left it."""

    version: int
    value: str
    title: str | None
    description: str | None
    limit_chars: int
    author_kind: str
    author: str
    note: str | None
    created_ms: int


def _block_view(row: _Block) -> MemoryBlock:
    return MemoryBlock(**row._asdict())


def _not_found(namespace: str, label: str) -> NotFoundError:
    return NotFoundError(
        f"no memory block {label} in namespace {namespace!r}; `agen memory ls -n {namespace}` "
        "lists them",
        block=label,
    )


async def _current(hub: Hub, namespace: str, label: str) -> _Block:
    row = await hub.store.row(
        _Block,
        f"SELECT b.*, {_LAST_AUTHOR} FROM memory_blocks b WHERE namespace = ? AND label = ?",
        (namespace, label),
    )
    if row is None:
        raise _not_found(namespace, label)
    return row


async def list_memory(hub: Hub, p: Principal, req: ListMemoryRequest) -> ListMemoryResponse:
    p.require_namespace(req.namespace)
    rows = await hub.store.rows(
        _Summary,
        f"SELECT b.namespace, b.id, b.label, b.title, b.description, length(b.value) AS chars, b.limit_chars,"
        f" b.version, b.updated_ms, {_LAST_AUTHOR} FROM memory_blocks b WHERE namespace = ? ORDER BY label LIMIT ?",
        (req.namespace, req.limit),
    )
    return ListMemoryResponse(blocks=[MemoryBlockSummary(**r._asdict()) for r in rows])


async def get_memory(hub: Hub, p: Principal, req: GetMemoryRequest) -> MemoryBlockResponse:
    p.require_namespace(req.namespace)
    row = await _current(hub, req.namespace, req.label)
    if req.version is None or req.version == row.version:
        return MemoryBlockResponse(block=_block_view(row))
    old = await hub.store.row(
        _Version,
        f"SELECT {columns(_Version)} FROM memory_versions WHERE namespace = ? AND block_id = ?"
        " AND version = ?",
        (req.namespace, row.id, req.version),
    )
    if old is None:
        raise NotFoundError(
            f"memory block {req.label} has no version {req.version} (it is at version "
            f"{row.version}); `agen memory history {req.label}` lists its versions",
            block=req.label,
            version=req.version,
        )
    return MemoryBlockResponse(
        block=MemoryBlock(
            namespace=req.namespace,
            id=row.id,
            label=row.label,
            title=old.title,
            description=old.description,
            value=old.value,
            limit_chars=old.limit_chars,
            version=old.version,
            updated_ms=old.created_ms,
            author_kind=old.author_kind,
            author=old.author,
        )
    )


async def set_memory(hub: Hub, p: Principal, req: SetMemoryRequest) -> MemoryBlockResponse:
    p.require_namespace(req.namespace)
    author = mem.Author.person(p.subject)

    def fn(tx: Tx) -> None:
        mem.set_block(
            tx,
            req.namespace,
            req.label,
            req.value,
            description=req.description,
            limit_chars=req.limit_chars,
            title=req.title,
            expected_version=req.expected_version,
            author=author,
        )

    await hub.store.write(fn)
    return MemoryBlockResponse(block=_block_view(await _current(hub, req.namespace, req.label)))


async def memory_history(
    hub: Hub, p: Principal, req: MemoryHistoryRequest
) -> MemoryHistoryResponse:
    p.require_namespace(req.namespace)
    row = await _current(hub, req.namespace, req.label)
    rows = await hub.store.rows(
        _Version,
        f"SELECT {columns(_Version)} FROM memory_versions WHERE namespace = ? AND block_id = ?"
        " ORDER BY version DESC LIMIT ?",
        (req.namespace, row.id, req.limit),
    )
    return MemoryHistoryResponse(
        label=row.label,
        current_version=row.version,
        versions=[MemoryVersion(**r._asdict()) for r in rows],
    )


async def rollback_memory(
    hub: Hub, p: Principal, req: RollbackMemoryRequest
) -> MemoryBlockResponse:
    p.require_namespace(req.namespace)
    author = mem.Author.person(p.subject)
    await hub.store.write(
        lambda tx: mem.rollback_block(
            tx,
            req.namespace,
            req.label,
            req.to_version,
            expected_version=req.expected_version,
            author=author,
        )
    )
    return MemoryBlockResponse(block=_block_view(await _current(hub, req.namespace, req.label)))


class _Artifact(NamedTuple):
    """An artifact without its content."""

    namespace: str
    id: str
    name: str
    media_type: str
    size: int
    task_id: str | None
    run_id: str | None
    created_ms: int


class _ArtifactPage(NamedTuple):
    """An artifact and one page of its content (``page``, of ``total`` characters)."""

    namespace: str
    id: str
    name: str
    media_type: str
    size: int
    task_id: str | None
    run_id: str | None
    created_ms: int
    page: str | None
    total: int


_ART_COLS = columns(_Artifact)


def _artifact_view(row: _Artifact | _ArtifactPage) -> Artifact:
    return Artifact(
        namespace=row.namespace,
        id=row.id,
        name=row.name,
        media_type=row.media_type,
        size=row.size,
        task_id=row.task_id,
        run_id=row.run_id,
        created_ms=row.created_ms,
    )


async def list_artifacts(
    hub: Hub, p: Principal, req: ListArtifactsRequest
) -> ListArtifactsResponse:
    namespace = req.namespace
    sql, params = f"SELECT {_ART_COLS} FROM artifacts WHERE namespace = ?", [namespace]
    if req.task_id:
        task_ns = await hub.store.scalar("SELECT namespace FROM tasks WHERE id = ?", (req.task_id,))
        if task_ns is None or not p.sees(task_ns):
            raise NotFoundError(
                f"task {req.task_id} not found; `agen tasks` lists recent ones", task=req.task_id
            )
        namespace = params[0] = task_ns  # a task id names its namespace
        sql += " AND (task_id = ? OR run_id IN (SELECT id FROM runs WHERE task_id = ?))"
        params += [req.task_id, req.task_id]
    if req.run_id:
        sql += " AND run_id = ?"
        params.append(req.run_id)
    p.require_namespace(namespace)
    rows = await hub.store.rows(
        _Artifact, sql + " ORDER BY created_ms DESC, id LIMIT ?", [*params, req.limit]
    )
    return ListArtifactsResponse(artifacts=[_artifact_view(r) for r in rows])


async def get_artifact(hub: Hub, p: Principal, req: GetArtifactRequest) -> GetArtifactResponse:
    p.require_namespace(req.namespace)
    aid = req.id if req.id.startswith("sha256:") else f"sha256:{req.id}"
    rows = await hub.store.rows(
        _ArtifactPage,
        f"SELECT {_ART_COLS}, substr(content, ?, ?) AS page, length(content) AS total FROM artifacts"
        " WHERE namespace = ? AND id >= ? AND id < ? LIMIT 2",  # a prefix, as a range the primary key serves
        (req.offset + 1, req.length, req.namespace, aid, aid + "~"),
    )
    if not rows:
        raise NotFoundError(
            f"no artifact {req.id} in namespace {req.namespace!r}; `agen artifacts ls` lists them",
            artifact=req.id,
        )
    if len(rows) > 1:
        raise InvalidError(
            f"artifact id {req.id} matches more than one artifact in namespace {req.namespace!r}; "
            "give more of it",
            field="id",
        )
    row = rows[0]
    total, page = int(row.total), str(row.page or "")
    end = req.offset + len(page)
    return GetArtifactResponse(
        artifact=_artifact_view(row),
        content=page,
        total_chars=total,
        next_offset=end if end < total else None,
    )
