"""RecordFeedback and ListFeedback: scores on how tasks went, kept with the runs they rate.

A rating names a task or a run; the run's ids, deployment and definition digest are copied onto
the row, so an export (``agen feedback ls --json``) says exactly which agent version it judges.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from agen.domain import columns
from agen.domain.feedback import insert_feedback
from agen.hub.auth import Principal
from agen.hub.rpc.runs import find_run
from agen.hub.service import Hub
from agen.store import Store, loads
from agen.store.records import read
from agen.wire.feedback import (
    Feedback,
    FeedbackSummary,
    ListFeedbackRequest,
    ListFeedbackResponse,
    RecordFeedbackRequest,
    RecordFeedbackResponse,
)


class _FeedbackRow(NamedTuple):
    """A row of ``feedback`` (labels as JSON text)."""

    id: str
    namespace: str
    deployment: str
    run_id: str
    task_id: str | None
    digest: str | None
    score: float
    note: str | None
    labels: str
    by: str | None
    created_ms: int


class _Score(NamedTuple):
    run_id: str
    score: float
    created_ms: int


_SELECT = f"SELECT {columns(_FeedbackRow)} FROM feedback"


def feedback_view(row: _FeedbackRow) -> Feedback:
    return Feedback(
        id=row.id,
        namespace=row.namespace,
        deployment=row.deployment,
        run_id=row.run_id,
        task_id=row.task_id,
        digest=row.digest,
        score=row.score,
        note=row.note,
        labels=loads(row.labels, {}) or {},
        by=row.by,
        created_ms=int(row.created_ms),
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
    return RecordFeedbackResponse(feedback=feedback_view(read(_FeedbackRow, row)))


async def list_feedback(hub: Hub, p: Principal, req: ListFeedbackRequest) -> ListFeedbackResponse:
    """Newest first; ``id`` narrows to one task's or run's feedback."""
    p.require_namespace(req.namespace)
    sql = f"{_SELECT} WHERE namespace = ?"
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
        _FeedbackRow, sql + " ORDER BY created_ms DESC, id DESC LIMIT ?", [*params, req.limit]
    )
    return ListFeedbackResponse(feedback=[feedback_view(r) for r in rows])


async def summaries(store: Store, run_ids: list[str]) -> dict[str, FeedbackSummary]:
    """Per run: how many ratings, the latest score and the mean (for ``agen runs``)."""
    if not run_ids:
        return {}
    rows = await store.rows(
        _Score,
        f"SELECT {columns(_Score)} FROM feedback"
        f" WHERE run_id IN ({','.join('?' * len(run_ids))}) ORDER BY created_ms, id",
        run_ids,
    )
    by_run: dict[str, list[float]] = {}
    for r in rows:
        by_run.setdefault(r.run_id, []).append(r.score)
    return {
        rid: FeedbackSummary(count=len(s), last_score=s[-1], mean_score=round(sum(s) / len(s), 4))
        for rid, s in by_run.items()
    }


async def of_run(store: Store, run_id: str) -> list[Feedback]:
    rows = await store.rows(
        _FeedbackRow, f"{_SELECT} WHERE run_id = ? ORDER BY created_ms, id", (run_id,)
    )
    return [feedback_view(r) for r in rows]
