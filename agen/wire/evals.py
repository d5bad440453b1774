"""Replay and eval RPC shapes: a run's replay source, eval results recorded and read back."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from agen.wire.common import NAME_PATTERN, Count, Model, TimeMs
from agen.wire.observe import Run, TranscriptMessage


class GetReplaySourceRequest(Model):
    id: str = Field(min_length=1, description="a run id or a task id")


class GetReplaySourceResponse(Model):
    """What a replay needs: the run, its messages, its cassette and its deployment's current bundle."""

    run: Run
    messages: list[TranscriptMessage]
    interactions: list[dict[str, Any]] | None = Field(
        None, description="the run's cassette (recordInteractions on), else null"
    )
    files: dict[str, str] | None = Field(
        None,
        description="the deployment's current bundle files (path -> base64), null if it was deleted",
    )


class EvalCheck(Model):
    """One check's verdict in one eval run (the judge's reasoning in ``reason`` for a rubric)."""

    check: str = Field(max_length=40)
    name: str = Field(max_length=200)
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    reason: str = Field("", max_length=4000)
    turn: int | None = None


class EvalRunIn(Model):
    scenario: str = Field(min_length=1, max_length=200)
    run_index: Count
    passed: bool
    failures: list[str] = Field(
        default=[], max_length=100
    )  # readable lines, one per failed expectation
    duration_ms: Count = 0
    score: float | None = Field(
        None, ge=0.0, le=1.0, description="the weighted mean of its checks' scores"
    )
    input_tokens: Count = 0
    output_tokens: Count = 0
    cost_usd: float = Field(0.0, ge=0.0)
    checks: list[EvalCheck] = Field(default=[], max_length=200)


class EvalRunOut(EvalRunIn):
    """A recorded eval run (``score`` is 1.0/0.0 by ``passed`` for runs recorded before scores)."""

    score: float = Field(ge=0.0, le=1.0)


class RecordEvalRunsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    bundle: str = Field(min_length=1, max_length=200)
    digest: str = Field(min_length=1, max_length=200)
    runs: list[EvalRunIn] = Field(min_length=1, max_length=100_000)


class RecordEvalRunsResponse(Model):
    batch: str
    recorded: int


class ListEvalRunsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    bundle: str = Field(min_length=1, max_length=200)
    limit: int = Field(20, ge=1, le=1000, description="most recent evals (batches)")


class EvalBatch(Model):
    """One `agen eval` of one bundle digest: per scenario, runs and passes."""

    batch: str
    digest: str
    created_ms: TimeMs
    scenarios: dict[str, list[int]] = Field(description="scenario -> [passed runs, runs]")
    scores: dict[str, float] = Field(default={}, description="scenario -> mean score of its runs")


class ListEvalRunsResponse(Model):
    evals: list[EvalBatch]


class GetEvalRunsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    ref: str = Field(
        min_length=1,
        max_length=200,
        description="a recorded eval's id (batch), or a bundle digest (its newest eval)",
    )
    bundle: str | None = Field(None, max_length=200, description="only evals of this bundle name")


class GetEvalRunsResponse(Model):
    """One recorded eval, every run of it."""

    batch: str
    bundle: str
    digest: str
    created_ms: TimeMs
    runs: list[EvalRunOut]
