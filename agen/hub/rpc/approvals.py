"""Approval RPCs: list pending (or all) approvals; read one whole; decide one (the runner's decide_approval), which
wakes the task suspended on it: it is queued again and its run resumes from its checkpoint."""

from __future__ import annotations

from typing import NamedTuple

from agen.domain import columns
from agen.errors import NotFoundError
from agen.hub.auth import Principal
from agen.hub.queue.holds import write_inbox
from agen.hub.service import Hub
from agen.store import Tx, loads
from agen.wire.approvals import (
    Approval,
    ApprovalResponse,
    DecideApprovalRequest,
    GetApprovalRequest,
    ListApprovalsRequest,
    ListApprovalsResponse,
)


class _ApprovalRow(NamedTuple):
    """What the API shows of a row of ``approvals`` (its arguments as stored: redacted JSON text)."""

    id: str
    namespace: str
    deployment: str
    run_id: str
    task_id: str | None
    tool: str
    arguments: str
    state: str
    requested_by: str | None
    decided_by: str | None
    decided_ms: int | None
    note: str | None
    created_ms: int


_SELECT = f"SELECT {columns(_ApprovalRow)} FROM approvals"


def approval_view(row: _ApprovalRow) -> Approval:
    return Approval(
        id=row.id,
        namespace=row.namespace,
        deployment=row.deployment,
        run_id=row.run_id,
        task_id=row.task_id,
        tool=row.tool,
        arguments=loads(row.arguments),
        state=row.state,
        requested_by=row.requested_by,
        decided_by=row.decided_by,
        decided_ms=row.decided_ms,
        note=row.note,
        created_ms=row.created_ms,
    )


async def list_approvals(
    hub: Hub, p: Principal, req: ListApprovalsRequest
) -> ListApprovalsResponse:
    p.require_namespace(req.namespace)
    sql, params = f"{_SELECT} WHERE namespace = ?", [req.namespace]
    if not req.all:
        sql += " AND state = 'pending'"
    if req.task_id:
        sql += " AND task_id = ?"
        params.append(req.task_id)
    rows = await hub.store.rows(
        _ApprovalRow, sql + " ORDER BY created_ms DESC LIMIT ?", [*params, req.limit]
    )
    return ListApprovalsResponse(approvals=[approval_view(r) for r in rows])


async def get_approval(hub: Hub, p: Principal, req: GetApprovalRequest) -> ApprovalResponse:
    row = await hub.store.row(_ApprovalRow, f"{_SELECT} WHERE id = ?", (req.id,))
    if row is None or not p.sees(row.namespace):
        raise NotFoundError(
            f"approval {req.id} not found; `agen approvals --all` lists them", approval=req.id
        )
    return ApprovalResponse(approval=approval_view(row))


async def decide_approval(hub: Hub, p: Principal, req: DecideApprovalRequest) -> ApprovalResponse:
    from agen.domain.approvals import decide_approval as decide

    namespace = await hub.store.scalar("SELECT namespace FROM approvals WHERE id = ?", (req.id,))
    if namespace is None or not p.sees(namespace):
        raise NotFoundError(
            f"approval {req.id} not found; `agen approvals` lists pending ones", approval=req.id
        )

    def fn(tx: Tx) -> _ApprovalRow:
        decide(
            tx,
            req.id,
            approve=req.approve,
            by=p.subject,
            note=req.note,
            allow_self=hub.allow_self_approval,
        )
        updated = tx.row(_ApprovalRow, f"{_SELECT} WHERE id = ?", (req.id,))
        assert updated is not None  # decided in this transaction
        if updated.task_id is not None and tx.scalar(
            "SELECT 1 FROM tasks WHERE id = ?", (updated.task_id,)
        ):
            # the task suspended on "approval:<id>" goes back to the queue; its run resumes from its checkpoint
            write_inbox(
                tx, updated.task_id, "approval", req.id, {"state": updated.state, "by": p.subject}
            )
        return updated

    updated = await hub.store.write(fn)
    hub.work.notify()
    return ApprovalResponse(approval=approval_view(updated))
