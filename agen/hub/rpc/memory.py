"""Memory and artifact RPCs: people see, set and roll back memory blocks (every write is a
version with its author) and read the artifacts agents saved. Reads need viewer, writes operator;
every request is held to the caller's namespaces."""

from __future__ import annotations

from agen.domain import memory as mem
from agen.errors import InvalidError, NotFoundError
from agen.hub.auth import Principal
from agen.hub.service import Hub
from agen.store import Row, Tx
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


def _block_view(row: Row) -> MemoryBlock:
    return MemoryBlock(
        namespace=row["namespace"],
        id=row["id"],
        label=row["label"],
        title=row["title"],
        description=row["description"],
        value=row["value"],
        limit_chars=row["limit_chars"],
        version=row["version"],
        updated_ms=row["updated_ms"],
        author_kind=row["author_kind"],
        author=row["author"],
    )


def _not_found(namespace: str, label: str) -> NotFoundError:
    return NotFoundError(
        f"no memory block {label} in namespace {namespace!r}; `agen memory ls -n {namespace}` "
        "lists them",
        block=label,
    )


async def _current(hub: Hub, namespace: str, label: str) -> Row:
    row = await hub.store.one(
        f"SELECT b.*, {_LAST_AUTHOR} FROM memory_blocks b WHERE namespace = ? AND label = ?",
        (namespace, label),
    )
    if row is None:
        raise _not_found(namespace, label)
    return row


async def list_memory(hub: Hub, p: Principal, req: ListMemoryRequest) -> ListMemoryResponse:
    p.require_namespace(req.namespace)
    rows = await hub.store.all(
        f"SELECT b.namespace, b.id, b.label, b.title, b.description, length(b.value) AS chars, b.limit_chars,"
        f" b.version, b.updated_ms, {_LAST_AUTHOR} FROM memory_blocks b WHERE namespace = ? ORDER BY label LIMIT ?",
        (req.namespace, req.limit),
    )
    return ListMemoryResponse(blocks=[MemoryBlockSummary(**dict(r)) for r in rows])


async def get_memory(hub: Hub, p: Principal, req: GetMemoryRequest) -> MemoryBlockResponse:
    p.require_namespace(req.namespace)
    row = await _current(hub, req.namespace, req.label)
    if req.version is None or req.version == row["version"]:
        return MemoryBlockResponse(block=_block_view(row))
    old = await hub.store.one(
        "SELECT * FROM memory_versions WHERE namespace = ? AND block_id = ? AND version = ?",
        (req.namespace, row["id"], req.version),
    )
    if old is None:
        raise NotFoundError(
            f"memory block {req.label} has no version {req.version} (it is at version "
            f"{row['version']}); `agen memory history {req.label}` lists its versions",
            block=req.label,
            version=req.version,
        )
    return MemoryBlockResponse(
        block=MemoryBlock(
            namespace=req.namespace,
            id=row["id"],
            label=row["label"],
            title=old["title"],
            description=old["description"],
            value=old["value"],
            limit_chars=old["limit_chars"],
            version=old["version"],
            updated_ms=old["created_ms"],
            author_kind=old["author_kind"],
            author=old["author"],
        )
    )


async def set_memory(hub: Hub, p: Principal, req: SetMemoryRequest) -> MemoryBlockResponse:
    p.require_namespace(req.namespace)
    author = mem.Author.person(p.subject)

    def fn(tx: Tx) -> mem.MemoryBlockRow:
        return mem.set_block(
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
    rows = await hub.store.all(
        "SELECT * FROM memory_versions WHERE namespace = ? AND block_id = ?"
        " ORDER BY version DESC LIMIT ?",
        (req.namespace, row["id"], req.limit),
    )
    return MemoryHistoryResponse(
        label=row["label"],
        current_version=row["version"],
        versions=[
            MemoryVersion(
                version=r["version"],
                value=r["value"],
                title=r["title"],
                description=r["description"],
                limit_chars=r["limit_chars"],
                author_kind=r["author_kind"],
                author=r["author"],
                note=r["note"],
                created_ms=r["created_ms"],
            )
            for r in rows
        ],
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


_ART_COLS = "namespace, id, name, media_type, size, task_id, run_id, created_ms"


def _artifact_view(row: Row) -> Artifact:
    return Artifact(**{k: row[k] for k in _ART_COLS.split(", ")})


async def list_artifacts(
    hub: Hub, p: Principal, req: ListArtifactsRequest
) -> ListArtifactsResponse:
    namespace = req.namespace
    sql, params = f"SELECT {_ART_COLS} FROM artifacts WHERE namespace = ?", [namespace]
    if req.task_id:
        task = await hub.store.one("SELECT namespace FROM tasks WHERE id = ?", (req.task_id,))
        if task is None or not p.sees(task["namespace"]):
            raise NotFoundError(
                f"task {req.task_id} not found; `agen tasks` lists recent ones", task=req.task_id
            )
        namespace = params[0] = task["namespace"]  # a task id names its namespace
        sql += " AND (task_id = ? OR run_id IN (SELECT id FROM runs WHERE task_id = ?))"
        params += [req.task_id, req.task_id]
    if req.run_id:
        sql += " AND run_id = ?"
        params.append(req.run_id)
    p.require_namespace(namespace)
    rows = await hub.store.all(sql + " ORDER BY created_ms DESC, id LIMIT ?", [*params, req.limit])
    return ListArtifactsResponse(artifacts=[_artifact_view(r) for r in rows])


async def get_artifact(hub: Hub, p: Principal, req: GetArtifactRequest) -> GetArtifactResponse:
    p.require_namespace(req.namespace)
    aid = req.id if req.id.startswith("sha256:") else f"sha256:{req.id}"
    rows = await hub.store.all(
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
    total, page = int(row["total"]), str(row["page"] or "")
    end = req.offset + len(page)
    return GetArtifactResponse(
        artifact=_artifact_view(row),
        content=page,
        total_chars=total,
        next_offset=end if end < total else None,
    )
