"""Typed partial reads of the deployments, tasks and runs tables: the few columns one decision
needs, as a frozen row read from the SELECT (agen.store.records), instead of a dict passed on.

Why partial rows and not always the whole row: the leader's tick, the lease gate and the trigger
ticks read a handful of columns of every deployment (the lease gate on every lease); ``SELECT *``
would carry the policy, limits and placement JSON through each. The SELECT's column list is
``columns(Type)``, so the query and the fields cannot drift apart; tests/unit/test_domain_rows.py
checks every field is a column of its table. Read like every row (agen.store.records), so a hot
path pays no more than for a dict.

A function that only needs a deployment's name takes either the whole row or the partial one
(``DeploymentRow | DeploymentRef``): both carry the same fields under the same names.
"""

from __future__ import annotations

from typing import NamedTuple

from agen.domain.states import DeploymentKind, TaskState
from agen.store.records import Amount, Count
from agen.store.records import columns as columns  # the SELECT list of a row type, re-exported


class DeploymentRef(NamedTuple):
    """Which deployment, and the definition it runs: what triggers, holds, delegation replies,
    task-input redaction and platform secrets read."""

    id: str
    namespace: str
    name: str
    definition_id: str


class DeploymentBudget(NamedTuple):
    """A deployment's daily budget (JSON text, as stored) and what the lease gate decides with it."""

    id: str
    namespace: str
    name: str
    kind: DeploymentKind
    budget: str = "{}"


class DeploymentSizing(NamedTuple):
    """What the leader's scheduler reads of every deployment each tick to scale and place it."""

    id: str
    namespace: str
    name: str
    kind: DeploymentKind
    digest: str
    scale: str  # JSON text
    placement: str  # JSON text
    desired: int
    paused: bool
    last_activity_ms: int
    manual_scale_ms: int | None = None
    saturated_ms: int | None = None  # the last saturation report from a Nest
    saturated_want: int | None = None  # what it asked for: live instances then + 1


class DeploymentLimits(NamedTuple):
    """A deployment's per-run limits (JSON text, as stored), for GetActivity's warnings."""

    namespace: str
    name: str
    limits: str = "{}"


class TaskStatus(NamedTuple):
    """Where a task is: what a run's view and GetActivity read of the run's task."""

    id: str
    state: TaskState
    held: bool
    wait_for: str | None
    updated_ms: int


class TaskBrief(NamedTuple):
    """Whose task and where it is: what a progress report and an on-behalf token's check read."""

    id: str
    namespace: str
    deployment: str
    state: TaskState
    labels: str = "{}"  # JSON text, as stored
    submitted_by: str | None = None


class TaskLineage(NamedTuple):
    """Where a task sits in its tree: what a child's submission inherits from its parent."""

    id: str
    root_task_id: str
    depth: int
    labels: str = "{}"  # JSON text, as stored


class TaskOrigin(NamedTuple):
    """Where a task came from: what an event trigger reads of the task behind an event, so a trigger
    never fires on its own task's events and a chain of triggers stays bounded."""

    id: str
    deployment_id: str
    source: str
    event_chain: Count = 0


class RunUsage(NamedTuple):
    """What one task's run spent, for GetTaskTree's nodes."""

    task_id: str
    cost_usd: Amount = 0.0
    input_tokens: Count = 0
    output_tokens: Count = 0


class RunRef(NamedTuple):
    """A run and the root of its tree: what a delegating task's child is tied to."""

    id: str
    root_run_id: str


class NewTaskRow(NamedTuple):
    """The columns SubmitTask inserts into ``tasks`` (the INSERT's column list is its fields; the
    Store fills ``seq`` and every column left to its default)."""

    id: str
    namespace: str
    deployment_id: str
    deployment: str
    state: TaskState
    input: str
    source: str
    conversation_key: str | None
    labels: str  # JSON text
    priority: int
    idempotency_key: str | None
    schedule_key: str | None
    not_before_ms: int | None
    not_after_ms: int | None
    trust: str
    model_tier: str | None
    overrides: str | None  # JSON text
    parent_task_id: str | None
    root_task_id: str
    depth: int
    reply_deployment: str | None
    reply_conversation_key: str | None
    on_parent_end: str
    event_chain: int
    submitted_by: str | None
    traceparent: str | None
    attachments: str | None  # JSON text: [Attachment]
    created_ms: int
    updated_ms: int
