"""Read-only views of what agents do: runs, transcripts, traces, task queries, activity, metrics."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agen.wire.common import NAME_PATTERN, Count, Model, TimeMs
from agen.wire.feedback import Feedback, FeedbackSummary
from agen.wire.tasks import Task

RunStatus = Literal["running", "waiting_approval", "succeeded", "failed", "cancelled"]
Doing = Literal["model", "tool", "agent", "approval", "idle"]
Severity = Literal["warning", "critical"]


class Usage(Model):
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0


class Run(Model):
    id: str
    namespace: str
    deployment: str
    task_id: str | None = None
    parent_run_id: str | None = None
    root_run_id: str
    trace_id: str
    status: str
    activity: str
    stopped_reason: str | None = None
    needs: str | None = Field(None, description="activity needs: what it needs (approval)")
    source: str = "api"
    requested_by: str | None = None
    labels: dict[str, str] = {}
    model: str | None = None
    turns: int = 0
    usage: Usage = Usage()
    tree_usage: Usage | None = Field(
        None, description="with --roots: this run plus every run it delegated to"
    )
    tree_runs: int | None = None
    input: str | None = None
    outcome: dict[str, Any] | None = None
    effect_unknown: bool = Field(
        False,
        description="resumed past a side effect that was started and never "
        "confirmed (effect_unknown): check what really happened",
    )
    started_ms: int
    updated_ms: int
    finished_ms: int | None = None
    feedback: FeedbackSummary | None = Field(
        None, description="scores recorded with `agen feedback record`"
    )


class ListRunsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    deployment: str | None = None
    roots: bool = False
    status: RunStatus | None = None
    effect_unknown: bool = Field(False, description="only runs that met an effect_unknown")
    labels: dict[str, str] = {}
    since_ms: TimeMs | None = Field(None, description="only runs started within this many ms")
    task_id: str | None = None
    limit: int = Field(20, ge=1, le=1000)


class ListRunsResponse(Model):
    runs: list[Run]


class ToolCall(Model):
    id: str
    name: str
    arguments: Any = None


class TranscriptMessage(Model):
    seq: int
    run_id: str
    turn: int = 0
    role: str
    content: str | None = None
    tool_calls: list[ToolCall] = []
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    model: str | None = None
    usage: dict[str, Any] | None = None
    created_ms: int


class GetTranscriptRequest(Model):
    id: str = Field(min_length=1, description="a run id or a task id")
    namespace: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="only if it is in this namespace (default: any the token sees)",
    )
    history: bool = False
    system: bool = False
    after_seq: Count = Field(0, description="only messages after this seq (live follow)")


class GetTranscriptResponse(Model):
    run: Run
    system: str | None = None
    messages: list[TranscriptMessage]
    feedback: list[Feedback] = []


class Span(Model):
    id: str
    parent_id: str | None = None
    trace_id: str
    run_id: str | None = None
    task_id: str | None = None
    deployment: str | None = None
    name: str
    status: str
    attrs: dict[str, Any] = {}
    error: str | None = None
    started_ms: int
    ended_ms: int | None = None
    duration_ms: int | None = None


class GetTraceRequest(Model):
    id: str = Field(min_length=1, description="a task id, a trace id or a run id")
    namespace: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="only if it is in this namespace (default: any the token sees)",
    )


class GetTraceResponse(Model):
    trace_id: str
    spans: list[Span]
    runs: list[Run]
    started_ms: int
    ended_ms: int | None = None
    usage: Usage
    errors: int = 0


class QueryTaskRequest(Model):
    id: str = Field(min_length=1)
    namespace: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="only if it is in this namespace (default: any the token sees)",
    )


class RunActivity(Model):
    run_id: str
    namespace: str
    deployment: str
    task_id: str | None = None
    status: str
    activity: str
    stopped_reason: str | None = None
    needs: str | None = Field(None, description="activity needs: what it needs (approval)")
    doing: Doing
    detail: str | None = Field(None, description="the tool, model, approval id or awaited task")
    since_ms: int
    turns: int = 0
    max_turns: int | None = None
    usage: Usage = Usage()
    max_usd_per_run: float | None = None
    caller: str | None = None
    source: str = "api"
    labels: dict[str, str] = {}
    started_ms: int


class QueryTaskResponse(Model):
    task: Task
    run: Run | None = None
    now: RunActivity | None = None
    feedback: list[Feedback] = Field(
        default=[], description="its run's feedback, oldest first (people, reviewer, approvals)"
    )


class Queue(Model):
    namespace: str
    deployment: str
    due: int = 0
    scheduled: int = 0
    running: int = 0
    waiting: int = 0
    oldest_wait_ms: int | None = Field(None, description="how long the oldest due task has waited")


class ActivityWarning(Model):
    kind: str
    severity: Severity
    namespace: str
    deployment: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    message: str
    since_ms: int | None = None
    data: dict[str, Any] = {}


class GetActivityRequest(Model):
    namespace: str | None = Field(
        None, pattern=NAME_PATTERN, description="default: every namespace you may see"
    )
    deployment: str | None = None


class GetActivityResponse(Model):
    runs: list[RunActivity]
    queues: list[Queue]
    warnings: list[ActivityWarning]
    now_ms: int


class ModelMetrics(Model):
    model: str
    provider: str | None = None
    calls: int = 0
    failures: int = 0
    fallbacks: int = 0
    p50_ms: int | None = None
    p95_ms: int | None = None
    usage: Usage = Usage()


class EntryMetrics(Model):
    source: str
    deployment: str
    runs: int = 0
    failed: int = 0
    usage: Usage = Usage()


class EdgeMetrics(Model):
    caller: str
    callee: str
    calls: int = 0
    active: int = 0
    p95_ms: int | None = None


class GetMetricsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    window_ms: int = Field(3_600_000, ge=60_000, le=7 * 86_400_000)
    buckets: int = Field(12, ge=1, le=120, description="throughput buckets across the window")
    throughput_only: bool = Field(
        False, description="only the throughput series (cheap: for live fleet views)"
    )


class OtlpStats(Model):
    """Spans sent to the OTLP endpoint since `agen up` started, and those that could not be."""

    endpoint: str = Field(description="where spans go; header values are never shown")
    exported: int = 0
    dropped: int = Field(
        0, description="not queued: the send queue was full (collector slow or down)"
    )
    failed: int = Field(
        0, description="queued but not delivered (the exporter gave up after its retries)"
    )
    queued: int = 0


class GetMetricsResponse(Model):
    window_ms: int
    models: list[ModelMetrics]
    entries: list[EntryMetrics]
    edges: list[EdgeMetrics]
    throughput: dict[str, list[int]] = Field(
        default_factory=dict, description="runs started per bucket, per deployment, oldest first"
    )
    otlp: OtlpStats | None = Field(
        None, description="OTLP trace export (null when it is not configured)"
    )
