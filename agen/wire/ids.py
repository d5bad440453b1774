"""ResolveId: the short ids people copy from the TUI (a unique prefix or suffix) to whole ids."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agen.wire.common import NAME_PATTERN, Model

IdKind = Literal["task", "run", "approval", "task_or_run", "any"]


class ResolveIdRequest(Model):
    kind: IdKind = Field(description="what the id names; any: a task, run or trace id")
    text: str = Field(
        min_length=4,
        max_length=64,
        description="a whole id, or at least 4 characters of its start or end",
    )
    namespace: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="only in this namespace (default: any the token sees)",
    )


class ResolveIdResponse(Model):
    id: str
