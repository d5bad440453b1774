"""Reads of the feedback runs were given: one rating as the wire shows it, per-run summaries (`agen runs`)
and a run's ratings (its transcript and QueryTask). Recording and listing feedback are the RPCs of
agen.hub.rpc.feedback."""

from __future__ import annotations

from typing import NamedTuple

from agen.domain import columns
from agen.store import Store, loads
from agen.wire.feedback import Feedback, FeedbackSummary


class FeedbackRow(NamedTuple):
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


SELECT_FEEDBACK = f"SELECT {columns(FeedbackRow)} FROM feedback"


def feedback_view(row: FeedbackRow) -> Feedback:
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
        FeedbackRow, f"{SELECT_FEEDBACK} WHERE run_id = ? ORDER BY created_ms, id", (run_id,)
    )
    return [feedback_view(r) for r in rows]
