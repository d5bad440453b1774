"""Task RPC shapes: submit, get (with wait), list, cancel, pause, resume."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from agen.bundle.overrides import TaskOverrides
from agen.domain.attachments import Attachment, FileIn
from agen.otel.ids import TRACEPARENT_PATTERN
from agen.wire.common import NAME_PATTERN, Model, TimeMs

Priority = Literal["urgent", "high", "normal", "background"]
LockName = Annotated[
    str, Field(min_length=1, max_length=200, pattern=r"\S")
]  # = agen.hub.queue.locks.check_lock_names
TaskState = Literal[
    "queued", "leased", "running", "waiting", "succeeded", "failed", "cancelled", "expired"
]
TERMINAL_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled", "expired"})
QueueMode = Literal["followup", "collect", "steer", "interrupt"]
OnParentEnd = Literal["cancel", "abandon"]
CancelMode = Literal["hard", "immediate", "graceful"]


class Task(Model):
    id: str
    namespace: str
    deployment: str
    deployment_id: str
    state: str
    input: str
    attachments: list[Attachment] = Field(
        [], description="the files given with the input (artifacts of the namespace)"
    )
    source: str = "api"
    conversation_key: str | None = None
    labels: dict[str, str] = {}
    priority: str = "normal"
    idempotency_key: str | None = None
    schedule_key: str | None = None
    not_before_ms: int | None = None
    not_after_ms: int | None = None
    attempts: int = 0
    wait_reason: str | None = None
    wait_detail: str | None = None  # wait_reason instance_failing: the last start error
    wait_for: str | None = None
    held: bool = False
    held_until_ms: int | None = None
    hold_reason: str | None = None
    progress: Any = None
    outcome: dict[str, Any] | None = None
    error: str | None = None
    trust: str = "trusted"
    model_tier: str | None = None
    locks: list[str] = []
    run_id: str | None = None
    effect_unknown: bool = Field(
        False,
        description="its run met a side effect that may or may not have happened "
        "(started, never confirmed): check what really happened",
    )
    pending_approvals: list[str] = []
    parent_task_id: str | None = Field(None, description="the task that delegated this one")
    root_task_id: str | None = Field(None, description="the first task of its tree")
    depth: int = Field(0, description="delegation depth: 0 for a root task")
    parent_run_id: str | None = Field(None, description="the run that delegated this task")
    root_run_id: str | None = Field(None, description="the run at the root of its tree")
    on_parent_end: str = Field("cancel", description="what happens to it when its parent ends")
    cancel_at_ms: int | None = Field(
        None, description="a graceful cancel's deadline: the task is stopped then if still running"
    )
    created_ms: int
    started_ms: int | None = None
    finished_ms: int | None = None
    updated_ms: int


class SubmitTaskRequest(Model):
    model_config = ConfigDict(extra="forbid", regex_engine="python-re")  # traceparent's look-aheads

    namespace: str = Field("default", pattern=NAME_PATTERN)
    deployment: str = Field(min_length=1)
    input: str
    attachments: list[FileIn] = Field(
        [],
        max_length=20,
        description="files given with the input: images (png, jpeg, gif, webp), PDFs and UTF-8 "
        "text, at most 10 MiB each and 20 MiB together; stored as artifacts of the namespace and "
        "sent to the model in its provider's native form",
    )
    conversation_key: str | None = None
    labels: dict[str, str] = {}
    priority: Priority = "normal"
    idempotency_key: str | None = None
    schedule_key: str | None = None
    not_before_ms: TimeMs | None = None
    not_after_ms: TimeMs | None = None
    locks: list[LockName] = []
    trust: Literal["operator", "trusted", "untrusted"] | None = None
    model_tier: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    overrides: TaskOverrides | None = Field(
        None,
        description="narrowing of the bundle for this task (seed 000 §5); checked here, stored as JSON",
    )
    traceparent: str | None = Field(
        None,
        pattern=TRACEPARENT_PATTERN,
        description="W3C traceparent: the run joins this trace (the HTTP header of the same name sets it too)",
    )
    on_parent_end: OnParentEnd = Field(
        "cancel",
        description="what happens to this task's own joined children when it ends: cancel them, or abandon "
        "them (they keep running)",
    )
    parent_run_id: str | None = Field(
        None,
        max_length=64,
        description="A2A lineage (agen.parent_run_id): the calling run; accepted only with an agent's "
        "call token, and only for a run of the calling deployment (root and depth come from it)",
    )
    delivery: QueueMode | None = Field(
        None,
        description="the conversation's queue mode for this submission only (default: the bundle's "
        "conversations.queueMode): followup queues it, collect merges it into the conversation's queued "
        "task, steer hands it to the running task as new input, interrupt asks the running task to wrap up "
        "and queues it after",
    )


class TaskResponse(Model):
    task: Task
    created: bool = False


class GetTaskRequest(Model):
    """wait_seconds > 0 waits for the task to end, or to start waiting for an approval."""

    id: str
    namespace: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="only if the task is in this namespace (default: any the token sees)",
    )
    wait_seconds: float = Field(0, ge=0, le=300)


class ListTasksRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    deployment: str | None = None
    state: TaskState | None = None
    labels: dict[str, str] = Field(
        default_factory=dict, description="only tasks carrying every one of these"
    )
    scheduled: bool = False
    limit: int = Field(20, ge=1, le=1000)


class ListTasksResponse(Model):
    tasks: list[Task]


class CancelTaskRequest(Model):
    """``grace_period_seconds`` applies to ``mode: graceful`` only; with another mode it is refused
    rather than ignored."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"mode": {"const": "graceful"}}, "required": ["mode"]},
                {"properties": {"grace_period_seconds": {"type": "null"}}},
            ]
        },
    )

    id: str
    namespace: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="only if the task is in this namespace (default: any the token sees)",
    )
    reason: str | None = None
    tree: bool = Field(
        False,
        description="every unfinished task of its whole tree (its root and every descendant), not just this one",
    )
    mode: CancelMode = Field(
        "hard",
        description="hard (or immediate): stop at once; graceful: each running task gets a last turn to "
        "call finish, and is stopped after grace_period_seconds if it has not ended",
    )
    grace_period_seconds: float | None = Field(
        None,
        gt=0,
        le=300,
        description="mode graceful only: the wrap-up time (default 20, at most 300)",
    )


class PauseTaskRequest(Model):
    id: str
    namespace: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="only if the task is in this namespace (default: any the token sees)",
    )
    hold_until_ms: TimeMs | None = None
    reason: str | None = None
    tree: bool = Field(
        False,
        description="hold every unfinished task of its whole tree (its root and every descendant)",
    )


class ResumeTaskRequest(Model):
    id: str
    namespace: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="only if the task is in this namespace (default: any the token sees)",
    )
    tree: bool = Field(False, description="end the hold on every task of its whole tree")


class GetTaskTreeRequest(Model):
    id: str = Field(description="any task of the tree")
    namespace: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="only if the task is in this namespace (default: any the token sees)",
    )


class TaskTreeNode(Model):
    """One task of a tree with what its run cost so far."""

    task: Task
    cost_usd: float = 0.0
    tokens: int = 0
    duration_ms: int | None = Field(
        None, description="started to finished (or to now while it runs); none before it starts"
    )
    unfinished_children: int = Field(0, description="direct children not ended yet")


class GetTaskTreeResponse(Model):
    root_task_id: str
    tasks: list[TaskTreeNode] = Field(
        description="every task of the tree, a parent before its children"
    )
