"""Feedback RPC shapes: a score on how a task's run went, with a note and labels (seed 000 §7)."""

from __future__ import annotations

from pydantic import Field

from agen.wire.common import NAME_PATTERN, Model, TimeMs

SCORE_RANGE = "from -1.0 (bad) to 1.0 (good); 0.0-1.0 ratings fit inside"


class Feedback(Model):
    id: str
    namespace: str
    deployment: str
    run_id: str
    task_id: str | None = None
    digest: str | None = Field(None, description="the bundle definition the rated run ran on")
    score: float
    note: str | None = None
    labels: dict[str, str] = {}
    by: str | None = None
    created_ms: int


class FeedbackSummary(Model):
    """A run's feedback at a glance (``agen runs``): how many, the latest score, the mean."""

    count: int
    last_score: float
    mean_score: float


class RecordFeedbackRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    id: str = Field(min_length=1, description="a task id or a run id")
    score: float = Field(ge=-1.0, le=1.0, description=SCORE_RANGE)
    note: str | None = Field(None, max_length=4000)
    labels: dict[str, str] = {}


class RecordFeedbackResponse(Model):
    feedback: Feedback


class ListFeedbackRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    deployment: str | None = None
    id: str | None = Field(None, description="only the feedback on this task or run")
    labels: dict[str, str] = {}
    since_ms: TimeMs | None = Field(None, description="only feedback recorded within this many ms")
    limit: int = Field(100, ge=1, le=10000)


class ListFeedbackResponse(Model):
    feedback: list[Feedback]
