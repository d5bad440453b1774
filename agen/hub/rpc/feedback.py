"""RecordFeedback and ListFeedback: scores on how tasks went, kept with the runs they rate.

A rating names a task or a run; the run's ids, deployment and definition digest are copied onto
the row, so an export (``agen feedback ls --json``) says exactly which agent version it judges.
"""

from __future__ import annotations

from typing import Any

from agen.domain.feedback import insert_feedback
from agen.hub.auth import Principal
from agen.hub.observe.feedback import SELECT_FEEDBACK, FeedbackRow, feedback_view
from agen.hub.rpc.runs import find_run
from agen.hub.service import Hub
from agen.store import loads
from agen.store.records import read
from agen.wire.feedback import (
    ListFeedbackRequest,
    ListFeedbackResponse,
    RecordFeedbackRequest,
    RecordFeedbackResponse,
)


async def record_feedback(
    hub: Hub, p: Principal, req: RecordFeedbackRequest
) -> RecordFeedbackResponse:
    p.require_namespace(req.namespace)
    run = await find_run(hub, p, req.id)
    attrs = await hub.store.scalar(
        "SELECT attrs FROM spans WHERE run_id = ? AND name = 'agen.run' ORDER BY started_ms LIMIT 1",
        (run.id,),
    )
    digest = (loads(attrs, {}) or {}).get("agen.definition.digest")
    at = hub.clock()
    row = await hub.store.write(
        lambda tx: insert_feedback(
            tx,
            namespace=run.namespace,
            deployment=run.deployment,
            run_id=run.id,
            task_id=run.task_id,
            digest=digest,
            score=req.score,
            note=req.note,
            labels=req.labels,
            by=p.subject,
            created_ms=at,
        )
    )
    return RecordFeedbackResponse(feedback=feedback_view(read(FeedbackRow, row)))


async def list_feedback(hub: Hub, p: Principal, req: ListFeedbackRequest) -> ListFeedbackResponse:
    """Newest first; ``id`` narrows to one task's or run's feedback."""
    p.require_namespace(req.namespace)
    sql = f"{SELECT_FEEDBACK} WHERE namespace = ?"
    params: list[Any] = [req.namespace]
    if req.deployment:
        sql += " AND deployment = ?"
        params.append(req.deployment)
    if req.id:
        sql += " AND (run_id = ? OR task_id = ?)"
        params += [req.id, req.id]
    if req.since_ms is not None:
        sql += " AND created_ms >= ?"
        params.append(hub.clock() - req.since_ms)
    for key, value in sorted(req.labels.items()):
        sql += " AND EXISTS (SELECT 1 FROM json_each(feedback.labels) WHERE json_each.key = ? AND json_each.value = ?)"
        params += [key, value]
    rows = await hub.store.rows(
        FeedbackRow, sql + " ORDER BY created_ms DESC, id DESC LIMIT ?", [*params, req.limit]
    )
    return ListFeedbackResponse(feedback=[feedback_view(r) for r in rows])
