"""Every state the Store records, as ``StrEnum``s whose values are the exact strings of the
migrations' CHECK constraints (agen/store/migrations/0001_core.sql, 0009_approvals_cancelled.sql).

A ``StrEnum`` member *is* its string, so it goes into SQL parameters and JSON unchanged and
compares equal to what a row holds; a typo becomes an AttributeError mypy sees, not a state that
never matches.
"""

from __future__ import annotations

from enum import StrEnum


class TaskState(StrEnum):
    """tasks.state: queued -> leased -> running (-> waiting -> queued ...) -> one terminal state."""

    QUEUED = "queued"
    LEASED = "leased"
    RUNNING = "running"
    WAITING = "waiting"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


UNFINISHED: tuple[TaskState, ...] = (
    TaskState.QUEUED,
    TaskState.LEASED,
    TaskState.RUNNING,
    TaskState.WAITING,
)
"""A task that may still run (counts toward queue depth and conversation order)."""

TERMINAL: tuple[TaskState, ...] = (
    TaskState.SUCCEEDED,
    TaskState.FAILED,
    TaskState.CANCELLED,
    TaskState.EXPIRED,
)
"""A task that ended; nothing changes it any more."""

LIVE: tuple[TaskState, ...] = (TaskState.LEASED, TaskState.RUNNING)
"""A task held under a lease by some Nest (fenced by its lease id)."""


class RunStatus(StrEnum):
    """runs.status."""

    RUNNING = "running"
    WAITING_APPROVAL = "waiting_approval"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class OutcomeStatus(StrEnum):
    """Outcome.status: how the agent itself says the run ended (the finish tool's ``status``)."""

    DONE = "done"
    PARTIAL = "partial"
    FAILED = "failed"
    CANCELLED = "cancelled"
    NEEDS_INPUT = "needs_input"
    REJECTED = "rejected"


class DeploymentKind(StrEnum):
    """deployments.kind. A deployment has no state column: it is paused (a flag) or not."""

    SINGLETON = "singleton"
    POOL = "pool"
    TASK = "task"


class ApprovalState(StrEnum):
    """approvals.state."""

    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


class InstanceState(StrEnum):
    """instances.state, as the Nest's Manager reports it."""

    STARTING = "starting"
    READY = "ready"
    BUSY = "busy"
    DRAINING = "draining"
    STOPPED = "stopped"
    FAILED = "failed"


class NestState(StrEnum):
    """nests.state."""

    ACTIVE = "active"
    LOST = "lost"
    REVOKED = "revoked"
