"""Approval RPC shapes."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from agen.wire.common import NAME_PATTERN, Model


class Approval(Model):
    id: str
    namespace: str
    deployment: str
    run_id: str
    task_id: str | None = None
    tool: str
    arguments: Any = None
    state: str
    requested_by: str | None = None
    decided_by: str | None = None
    decided_ms: int | None = None
    note: str | None = None
    created_ms: int


class ListApprovalsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    all: bool = False
    task_id: str | None = None
    limit: int = Field(100, ge=1, le=1000)


class ListApprovalsResponse(Model):
    approvals: list[Approval]


class GetApprovalRequest(Model):
    id: str


class DecideApprovalRequest(Model):
    id: str
    approve: bool
    note: str | None = None


class ApprovalResponse(Model):
    approval: Approval
