"""The durable task queue (seed 000 §5 "Tasks"): submit, counts, why a task waits.

Every function is a plain transaction function ``fn(tx, ...)`` run with
``await store.write(lambda tx: fn(tx, ...))``. Leasing and ending tasks live in
agen.hub.lease, holds and the inbox in agen.hub.holds; they are re-exported here so
callers import the queue from one place.

Events (same transaction as the change): task.queued, task.leased, task.started,
task.released, task.requeued, task.waiting, task.held, task.resumed, and one event
per terminal state: task.succeeded, task.failed, task.cancelled, task.expired.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agen.hub.holds import (
    hold_deployment,
    is_held,
    pause_task,
    resume_deployment_hold,
    resume_task,
    wake_expired_holds,
    write_inbox,
)
from agen.hub.lease import (
    MAX_ATTEMPTS,
    cancel_task,
    complete_task,
    expire_leases,
    expire_overdue,
    extend_lease,
    lease_tasks,
    mark_running,
    release_task,
    suspend_task,
)
from agen.hub.locks import acquire_lock, release_lock
from agen.store import Tx

__all__ = [
    "MAX_ATTEMPTS", "PRIORITIES", "NewTask", "QueueCounts", "acquire_lock", "cancel_task",
    "complete_task", "expire_leases", "expire_overdue", "extend_lease", "hold_deployment",
    "is_held", "lease_tasks", "mark_running", "pause_task", "queue_counts", "release_lock",
    "release_task", "resume_deployment_hold", "resume_task", "submit_task", "suspend_task",
    "wait_reason", "wake_expired_holds", "write_inbox",
]

PRIORITIES: dict[str, int] = {"urgent": 0, "high": 1, "normal": 2, "background": 3}
MAX_NOT_BEFORE_MS = 90 * 24 * 3600 * 1000


@dataclass
class NewTask:
    """What SubmitTask stores; the Hub resolves the deployment and checks scopes first."""

    namespace: str
    deployment_id: str
    deployment: str
    input: str
    source: str = "api"
    conversation_key: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    priority: str | int = "normal"
    idempotency_key: str | None = None
    schedule_key: str | None = None
    not_before_ms: int | None = None
    not_after_ms: int | None = None
    locks: list[str] = field(default_factory=list)
    trust: str = "trusted"
    model_tier: str | None = None
    overrides: dict[str, Any] | None = None
    parent_task_id: str | None = None
    submitted_by: str | None = None
    event_chain: int = 0
    reply_deployment: str | None = None
    reply_conversation_key: str | None = None
    on_parent_end: str = "cancel"


@dataclass
class QueueCounts:
    """One deployment's queue at a glance (autoscaler load, `agen ps`, the TUI)."""

    queued: int = 0            # due now (not_before passed or unset)
    scheduled: int = 0         # queued with not_before in the future
    leased: int = 0
    running: int = 0
    waiting: int = 0
    urgent_load: int = 0       # urgent/high priority, due or in flight
    oldest_queued_ms: int | None = None

    @property
    def load(self) -> int:
        """Autoscaler load: due queued + leased + running (not scheduled, not waiting)."""
        return self.queued + self.leased + self.running


def submit_task(tx: Tx, t: NewTask, *, max_queued: int | None = None) -> tuple[dict[str, Any], bool]:
    """Store a queued task; (row, created). An idempotency key seen before returns the existing task.

    schedule_key cancels the deployment's queued task with that key in this transaction;
    ``max_queued`` (admission maxQueuedTasks) refuses with RateLimitedError stage="queue_full".
    """
    raise NotImplementedError


def wait_reason(tx: Tx, task: dict[str, Any], *, now_ms: int | None = None,
                deployment_paused: bool | None = None) -> str | None:
    """Why a queued task is not starting: scheduled, paused, held, conversation, locks or capacity."""
    raise NotImplementedError


def queue_counts(tx: Tx, *, now_ms: int | None = None,
                 deployment_ids: list[str] | None = None) -> dict[str, QueueCounts]:
    """Per-deployment counts of unfinished tasks in one aggregate query (deployment_id -> counts)."""
    raise NotImplementedError
