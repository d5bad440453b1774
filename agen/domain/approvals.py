"""Approvals as stored rules: who may decide one, deciding it, closing a finished task's pending ones.

The Hub (DecideApproval, a task's terminal path) and the engine (its durable approval gate) act on
the same ``approvals`` rows by the same rules, so they live here, below both; asking for an
approval and waiting on it stay in agen.runner.approvals.
"""

from __future__ import annotations

from typing import NamedTuple

from agen.domain.feedback import APPROVAL, insert_feedback
from agen.domain.states import ApprovalState
from agen.errors import ConflictError, DeniedError, NotFoundError
from agen.store.base import Tx, loads
from agen.store.records import columns

LOCAL_ADMIN_SUBJECT = (
    "local-admin"  # = agen.hub.auth.LOCAL_ADMIN_SUBJECT: the local `agen up`'s own user
)


class ApprovalRow(NamedTuple):
    """One row of ``approvals`` (0001_core.sql, 0009)."""

    id: str
    namespace: str
    deployment: str
    run_id: str
    task_id: str | None
    call_id: str | None
    tool: str
    arguments: str  # JSON text, redacted before it was written
    args_hash: str
    requested_by: str | None
    state: ApprovalState
    decided_by: str | None
    decided_ms: int | None
    note: str | None
    created_ms: int


class _SpanAttrs(NamedTuple):
    attrs: str | None  # JSON text


def may_self_approve(by: str, *, allow_self: bool = False) -> bool:
    """The self-approval rule: the single user of a local ``agen up`` (its local admin) approves its own
    work; any other principal only when the Hub is configured to allow it (``--allow-self-approval``)."""
    return allow_self or by == LOCAL_ADMIN_SUBJECT


def decide_approval(
    tx: Tx,
    approval_id: str,
    approve: bool,
    by: str,
    note: str | None = None,
    *,
    allow_self: bool = False,
) -> ApprovalRow:
    """Settle a pending approval (the Hub's DecideApproval); the requester cannot approve its own
    (see ``may_self_approve``). The Hub then wakes the waiting task (agen.hub.rpc.approvals)."""
    row = tx.row(
        ApprovalRow, f"SELECT {columns(ApprovalRow)} FROM approvals WHERE id = ?", (approval_id,)
    )
    if row is None:
        raise NotFoundError(
            f"approval {approval_id} does not exist; list pending ones with `agen approvals`",
            approval=approval_id,
        )
    if row.state == ApprovalState.CANCELLED:
        raise ConflictError(
            f"approval {approval_id} was closed because {row.note or 'its task ended'};"
            " there is nothing left to decide",
            approval=approval_id,
            state=row.state.value,
        )
    if row.state != ApprovalState.PENDING:
        who = f" by {row.decided_by}" if row.decided_by else ""
        raise ConflictError(
            f"approval {approval_id} was already {row.state.value}{who}; it cannot be decided again",
            approval=approval_id,
            state=row.state.value,
        )
    if (
        approve
        and row.requested_by is not None
        and by == row.requested_by
        and not may_self_approve(by, allow_self=allow_self)
    ):
        raise DeniedError(
            f"the principal that caused an approval cannot approve it: {by} submitted the task behind "
            f"approval {approval_id}; ask someone else to approve it (or deny it)",
            approval=approval_id,
        )
    state = ApprovalState.APPROVED if approve else ApprovalState.DENIED
    tx.execute(
        "UPDATE approvals SET state = ?, decided_by = ?, decided_ms = ?, note = ? WHERE id = ? AND state = 'pending'",
        (state, by, tx.now_ms, note, approval_id),
    )
    tx.event(
        row.namespace,
        "approval.decided",
        deployment=row.deployment,
        task_id=row.task_id,
        run_id=row.run_id,
        data={"approvalId": approval_id, "tool": row.tool, "state": state, "by": by},
    )
    span = tx.row(
        _SpanAttrs,
        "SELECT attrs FROM spans WHERE run_id = ? AND name = 'agen.run' ORDER BY started_ms LIMIT 1",
        (row.run_id,),
    )
    insert_feedback(  # seed 000: approvals and explicit ratings land in the same place
        tx,
        namespace=row.namespace,
        deployment=row.deployment,
        run_id=row.run_id,
        task_id=row.task_id,
        digest=(loads(span.attrs, {}) or {}).get("agen.definition.digest") if span else None,
        score=1.0 if approve else 0.0,
        note=note,
        labels={"approval": approval_id, "tool": row.tool, "decidedBy": by},
        by=APPROVAL,
        created_ms=tx.now_ms,
    )
    return row._replace(state=state, decided_by=by, decided_ms=tx.now_ms, note=note)


def close_task_approvals(tx: Tx, task_id: str, state: str, by: str | None = None) -> int:
    """A task ended (cancelled, failed, expired): its pending approvals close as 'cancelled' and can no
    longer be decided. Returns how many closed."""
    rows = tx.rows(
        ApprovalRow,
        f"SELECT {columns(ApprovalRow)} FROM approvals WHERE task_id = ? AND state = 'pending'",
        (task_id,),
    )
    why = f"its task {task_id} was {state}" + (f" by {by}" if by else "")
    for row in rows:
        tx.execute(
            "UPDATE approvals SET state = 'cancelled', decided_by = ?, decided_ms = ?, note = ?"
            " WHERE id = ? AND state = 'pending'",
            (by, tx.now_ms, why, row.id),
        )
        tx.event(
            row.namespace,
            "approval.decided",
            deployment=row.deployment,
            task_id=task_id,
            run_id=row.run_id,
            data={"approvalId": row.id, "tool": row.tool, "state": "cancelled", "by": by},
        )
    return len(rows)
