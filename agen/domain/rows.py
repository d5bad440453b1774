"""Typed, frozen rows of the tasks, runs and deployments tables, each made from a Store row in
one place (``from_row``), so the Hub, the Nest and the runner pass names mypy checks instead of
``row["…"]`` subscripts.

Pydantic, not ``dataclass(frozen=True, slots=True)``, by measurement: building the 50-column task
row from the dict the Store returns costs ~4 µs through pydantic-core's ``model_validate`` (state
parsed to its enum, 0/1 to bool) and ~6 µs through a frozen dataclass's generated ``__init__``
(each field set via ``object.__setattr__``, nothing converted); a task row is built on every lease
and completion. Columns are kept
as the Store holds them (JSON columns stay text, decoded where used); unknown columns (a join, a
later migration) are ignored. A change is a new row: ``row.model_copy(update={...})``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

from pydantic import BaseModel, ConfigDict

from agen.domain.states import DeploymentKind, RunStatus, TaskState

_FROZEN = ConfigDict(frozen=True, extra="ignore")


class _Row(BaseModel):
    model_config = _FROZEN

    @classmethod
    def from_row(cls, row: Any) -> Self:
        """The typed row of a Store row (a mapping of column -> value, as ``tx.one``/``tx.all`` return)."""
        return cls.model_validate(row)


class TaskRow(_Row):
    """One row of ``tasks`` (agen/store/migrations/0001_core.sql, 0005, 0010, 0011, 0018, 0019)."""

    id: str
    namespace: str
    deployment_id: str
    deployment: str
    state: TaskState
    input: str
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
    root_task_id: str
    depth: int = 0
    parent_run_id: str | None = None
    root_run_id: str | None = None
    reply_deployment: str | None = None
    reply_conversation_key: str | None = None
    on_parent_end: str = "cancel"  # or "abandon" (agen.hub.queue.trees)
    cancel_at_ms: int | None = None  # a graceful cancel's wrap-up deadline
    event_chain: int = 0
    submitted_by: str | None = None
    traceparent: str | None = None
    seq: int
    created_ms: int
    started_ms: int | None = None
    finished_ms: int | None = None
    updated_ms: int


@dataclass(frozen=True, slots=True)
class LeasedTaskRow:
    """A task just leased: its row, the lease's lock fences (name -> fence) and whether the
    deployment's budget is under pressure (the run then keeps to cheaper tiers). Three fields, so a
    frozen dataclass: built per leased task without copying the row's fifty columns."""

    task: TaskRow
    lease_id: str  # the fencing token this lease handed out (also task.lease_id)
    locks: dict[str, int] = field(default_factory=dict)
    budget_pressure: bool = False


class RunRow(_Row):
    """One row of ``runs`` (0001_core.sql, 0010)."""

    id: str
    namespace: str
    deployment: str
    task_id: str | None = None
    session_id: str
    conversation_id: str
    parent_run_id: str | None = None
    root_run_id: str
    trace_id: str
    span_id: str | None = None
    status: RunStatus
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
    started_ms: int
    updated_ms: int
    finished_ms: int | None = None


class DeploymentRow(_Row):
    """One row of ``deployments`` (0001_core.sql). JSON columns stay text."""

    id: str
    namespace: str
    name: str
    kind: DeploymentKind
    definition_id: str
    digest: str
    scale: str
    placement: str = "{}"
    budget: str = "{}"
    limits: str = "{}"
    policy: str = "{}"
    desired: int = 0
    paused: bool = False
    pause_reason: str | None = None
    last_activity_ms: int
    manual_scale_ms: int | None = None
    created_ms: int
    updated_ms: int
