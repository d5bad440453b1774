"""Approval gates: a durable Store-backed one for managed runs, a callback one for the SDK.

"Ask" creates an approvals row (arguments already redacted; at most one pending per
run, tool and arguments) and an ``approval.requested`` event and marks the run
waiting_approval. A task's run then suspends (the gate answers ``pending``): the task
waits with no lease, slot or coroutine, survives restarts, and ``decide_approval``
(called by the Hub) wakes it; the resumed run asks again and reads the decision. A run
with no task (nothing to suspend) waits for the decision in place.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from agen.domain.approvals import (
    LOCAL_ADMIN_SUBJECT,
    ApprovalRow,
    close_task_approvals,
    decide_approval,
    may_self_approve,
)
from agen.domain.states import ApprovalState
from agen.runner.policy import ApprovalDecision, ApprovalGate, ApprovalRequest
from agen.store import event_log, new_ulid
from agen.store.base import Store, Tx, dumps
from agen.store.records import columns
from agen.util.canonical import canonical_json

__all__ = [  # the decision rules are agen.domain.approvals'; re-exported for the engine's callers
    "LOCAL_ADMIN_SUBJECT",
    "CallbackGate",
    "StoreApprovalGate",
    "close_task_approvals",
    "decide_approval",
    "may_self_approve",
    "request_approval",
]

POLL_S = 5.0
_BY_ID = f"SELECT {columns(ApprovalRow)} FROM approvals WHERE id = ?"


def args_hash(arguments: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(arguments).encode()).hexdigest()


def request_approval(tx: Tx, req: ApprovalRequest) -> ApprovalRow:
    """Create the pending approval (or reuse the one already pending / decided for this call)."""
    h = args_hash(req.arguments)
    row = tx.row(
        ApprovalRow,
        f"SELECT {columns(ApprovalRow)} FROM approvals"
        " WHERE run_id = ? AND call_id = ? AND tool = ? AND args_hash = ?"
        " ORDER BY created_ms DESC LIMIT 1",
        (req.run_id, req.call_id, req.tool, h),
    )
    if row is None:
        row = tx.row(
            ApprovalRow,
            f"SELECT {columns(ApprovalRow)} FROM approvals"
            " WHERE run_id = ? AND tool = ? AND args_hash = ? AND state = 'pending'",
            (req.run_id, req.tool, h),
        )
    if row is not None:
        if row.state == ApprovalState.PENDING:
            tx.execute(
                "UPDATE runs SET status = 'waiting_approval', updated_ms = ? WHERE id = ? AND status = 'running'",
                (tx.now_ms, req.run_id),
            )
        return row
    approval_id = new_ulid()
    tx.execute(
        "INSERT INTO approvals (id, namespace, deployment, run_id, task_id, call_id, tool, arguments, args_hash,"
        " requested_by, state, created_ms) VALUES (?,?,?,?,?,?,?,?,?,?,'pending',?)",
        (
            approval_id,
            req.namespace,
            req.deployment,
            req.run_id,
            req.task_id,
            req.call_id,
            req.tool,
            dumps(req.arguments),
            h,
            req.requested_by,
            tx.now_ms,
        ),
    )
    tx.execute(
        "UPDATE runs SET status = 'waiting_approval', updated_ms = ? WHERE id = ? AND status = 'running'",
        (tx.now_ms, req.run_id),
    )
    tx.event(
        req.namespace,
        "approval.requested",
        deployment=req.deployment,
        task_id=req.task_id,
        run_id=req.run_id,
        data={
            "approvalId": approval_id,
            "tool": req.tool,
            "arguments": req.arguments,
            "callId": req.call_id,
            "requestedBy": req.requested_by,
        },
    )
    created = tx.row(ApprovalRow, _BY_ID, (approval_id,))
    assert created is not None, "inserted by this transaction"
    return created


def _resume_run(tx: Tx, run_id: str) -> None:
    still = tx.scalar(
        "SELECT COUNT(*) FROM approvals WHERE run_id = ? AND state = 'pending'", (run_id,)
    )
    if not still:
        tx.execute(
            "UPDATE runs SET status = 'running', updated_ms = ? WHERE id = ? AND status = 'waiting_approval'",
            (tx.now_ms, run_id),
        )


def _decision(row: ApprovalRow) -> ApprovalDecision:
    if row.state == ApprovalState.APPROVED:
        return ApprovalDecision(True, note=row.note, decided_by=row.decided_by)
    note = row.note or (
        "the approval expired before anyone decided" if row.state == ApprovalState.EXPIRED else None
    )
    return ApprovalDecision(False, note=note, decided_by=row.decided_by)


class StoreApprovalGate(ApprovalGate):
    """Durable approvals: a row people decide on (CLI, TUI, API). A task's run suspends on it (the
    decision requeues the task); a run with no task waits for it in place."""

    def __init__(self, store: Store, *, poll_s: float = POLL_S) -> None:
        self.store = store
        self.poll_s = poll_s

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        seq = int(await self.store.scalar(event_log.head_sql(self.store.dialect)) or 0)
        row = await self.store.write(lambda tx: request_approval(tx, request))
        approval_id = row.id
        if row.state == ApprovalState.PENDING and request.task_id is not None:
            return ApprovalDecision(False, pending=approval_id)
        while row.state == ApprovalState.PENDING:
            seq = await self.store.wait_for_events(seq, self.poll_s)
            row = await self.store.row(ApprovalRow, _BY_ID, (approval_id,)) or row
        await self.store.write(lambda tx: _resume_run(tx, request.run_id))
        return _decision(row)


Callback = Callable[
    [ApprovalRequest], "ApprovalDecision | bool | Awaitable[ApprovalDecision | bool]"
]


class CallbackGate(ApprovalGate):
    """The SDK's gate: the host app's callback (sync or async) decides; True/False is enough."""

    def __init__(self, callback: Callback) -> None:
        self.callback = callback

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        if inspect.iscoroutinefunction(self.callback):
            answer = await self.callback(request)
        else:
            answer = await asyncio.to_thread(self.callback, request)
            if inspect.isawaitable(answer):
                answer = await answer
        if isinstance(answer, ApprovalDecision):
            return answer
        return ApprovalDecision(bool(answer), decided_by="callback")
