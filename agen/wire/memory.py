"""Memory block and artifact RPC shapes (seed 000 §7: memory blocks with versions, artifacts)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt

from agen.wire.common import NAME_PATTERN, Model

Label = Annotated[str, Field(min_length=1, max_length=200)]
Version = Annotated[StrictInt, Field(ge=0, le=2**31)]
LimitChars = Annotated[StrictInt, Field(ge=1, le=1_000_000)]


class MemoryBlock(Model):
    namespace: str
    id: str
    label: str
    title: str | None = None
    description: str | None = None
    value: str
    limit_chars: int
    version: int
    updated_ms: int
    author_kind: str | None = None
    author: str | None = None


class MemoryBlockSummary(Model):
    namespace: str
    id: str
    label: str
    title: str | None = None
    description: str | None = None
    chars: int
    limit_chars: int
    version: int
    updated_ms: int
    author_kind: str | None = None
    author: str | None = None


class MemoryVersion(Model):
    version: int
    value: str
    title: str | None = None
    description: str | None = None
    limit_chars: int
    author_kind: str = Field(
        description="run (an agent's memory_update), person, or unknown (written before history)"
    )
    author: str = Field(description="the run id, or the person's subject")
    note: str | None = None
    created_ms: int


class ListMemoryRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    limit: int = Field(500, ge=1, le=5000)


class ListMemoryResponse(Model):
    blocks: list[MemoryBlockSummary]


class GetMemoryRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    label: Label
    version: Version | None = Field(
        None, description="an earlier version's value; the current one when unset"
    )


class MemoryBlockResponse(Model):
    block: MemoryBlock


class SetMemoryRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    label: Label
    value: str = Field(max_length=1_000_000)
    title: str | None = Field(None, max_length=200)
    description: str | None = Field(None, max_length=2000)
    limit_chars: LimitChars | None = None
    expected_version: Version | None = Field(
        None,
        description="compare-and-set: refused (409, naming the current version) unless the block is at it; "
        "0 means the block must not exist yet",
    )


class MemoryHistoryRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    label: Label
    limit: int = Field(100, ge=1, le=10_000)


class MemoryHistoryResponse(Model):
    label: str
    current_version: int
    versions: list[MemoryVersion] = Field(description="newest first")


class RollbackMemoryRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    label: Label
    to_version: Version = Field(description="the version whose value becomes a new version")
    expected_version: Version | None = None


class Artifact(Model):
    namespace: str
    id: str
    name: str
    media_type: str
    size: int
    task_id: str | None = None
    run_id: str | None = None
    created_ms: int


class ListArtifactsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    task_id: str | None = Field(
        None, max_length=200, description="only this task's (its run's) artifacts"
    )
    run_id: str | None = Field(None, max_length=200, description="only this run's artifacts")
    limit: int = Field(200, ge=1, le=5000)


class ListArtifactsResponse(Model):
    artifacts: list[Artifact]


class GetArtifactRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    id: str = Field(
        min_length=1, max_length=200, description="sha256:<hex>, or a unique prefix of it"
    )
    offset: int = Field(0, ge=0, le=2**31, description="characters to skip")
    length: int = Field(
        1_000_000, ge=1, le=4_000_000, description="characters of content in this page"
    )


class GetArtifactResponse(Model):
    artifact: Artifact
    content: str
    total_chars: int
    next_offset: int | None = Field(
        None, description="where the next page starts; unset at the end"
    )
