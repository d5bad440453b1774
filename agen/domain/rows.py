"""Typed, frozen rows of the tasks, runs and deployments tables: ``tx.row(TaskRow, sql)`` reads
one (agen.store.records: the one way rows are read), so the Hub, the Nest and the runner pass names
mypy checks instead of ``row["…"]`` subscripts.

Columns are kept as the Store holds them (JSON columns stay text, decoded where used); one field per
column, which tests/unit/test_domain_rows.py checks against the migrated schema on both engines. A
change is a new row: ``row._replace(...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from agen.domain.states import DeploymentKind, RunStatus, TaskState


class TaskRow(NamedTuple):
    """One row of ``tasks`` (agen/store/migrations/0001_core.sql, 0005, 0010, 0011, 0018, 0019, 0025)."""

    id: str
    namespace: str
    deployment_id: str
    deployment: str
    state: TaskState
    input: str
    root_task_id: str
    seq: int
    created_ms: int
    updated_ms: int
    source: str = "api"
    conversation_key: str | None = None
    labels: str = "{}"  # JSON text, as stored (task events carry it as is)
    priority: int = 2
    idempotency_key: str | None = None
    schedule_key: str | None = None
    not_before_ms: int | None = None
    not_after_ms: int | None = None
    attempts: int = 0
    lease_id: str | None = None
    lease_nest_id: str | None = None
    lease_instance_id: str | None = None
    lease_expires_ms: int | None = None
    leased_ms: int | None = None
    wait_reason: str | None = None
    wait_for: str | None = None
    held: bool = False
    held_until_ms: int | None = None
    hold_reason: str | None = None
    held_by: str | None = None
    progress: str | None = None  # JSON text
    outcome: str | None = None  # JSON text
    error: str | None = None
    trust: str = "trusted"
    model_tier: str | None = None
    overrides: str | None = None  # JSON text
    parent_task_id: str | None = None
    depth: int = 0
    parent_run_id: str | None = None
    root_run_id: str | None = None
    reply_deployment: str | None = None
    reply_conversation_key: str | None = None
    on_parent_end: str = "cancel"  # or "abandon" (agen.hub.queue.tasks)
    cancel_at_ms: int | None = None  # a graceful cancel's wrap-up deadline
    event_chain: int = 0
    submitted_by: str | None = None
    traceparent: str | None = None
    started_ms: int | None = None
    finished_ms: int | None = None
    lost_before_start: int = 0  # leases lost with their host before the run started (not attempts)
    attachments: str | None = None  # JSON text: [Attachment], the files given with the input (0029)


@dataclass(frozen=True, slots=True)
class LeasedTaskRow:
    """A task just leased: its row, the lease's lock fences (name -> fence) and whether the
    deployment's budget is under pressure (the run then keeps to cheaper tiers). Three fields, so a
    frozen dataclass: built per leased task without copying the row's fifty columns."""

    task: TaskRow
    lease_id: str  # the fencing token this lease handed out (also task.lease_id)
    locks: dict[str, int] = field(default_factory=dict)
    budget_pressure: bool = False


class RunRow(NamedTuple):
    """One row of ``runs`` (0001_core.sql, 0010)."""

    id: str
    namespace: str
    deployment: str
    session_id: str
    conversation_id: str
    root_run_id: str
    trace_id: str
    status: RunStatus
    started_ms: int
    updated_ms: int
    task_id: str | None = None
    parent_run_id: str | None = None
    span_id: str | None = None
    outcome: str | None = None  # JSON text
    input: str | None = None
    owner: str | None = None
    epoch: int = 1
    turns: int = 0
    labels: str = "{}"
    trust: str = "trusted"
    source: str = "api"
    requested_by: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    effect_unknown: bool = False
    finished_ms: int | None = None


class DeploymentRow(NamedTuple):
    """One row of ``deployments`` (0001_core.sql). JSON columns stay text."""

    id: str
    namespace: str
    name: str
    kind: DeploymentKind
    definition_id: str
    digest: str
    scale: str
    last_activity_ms: int
    created_ms: int
    updated_ms: int
    placement: str = "{}"
    budget: str = "{}"
    limits: str = "{}"
    policy: str = "{}"
    desired: int = 0
    paused: bool = False
    pause_reason: str | None = None
    manual_scale_ms: int | None = None
    saturated_ms: int | None = None  # the last saturation report (0023_saturation.sql)
    saturated_want: int | None = None  # what it asked for: live instances then + 1
