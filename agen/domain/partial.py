"""Typed partial reads of the deployments, tasks and runs tables: the few columns one decision
needs, as a frozen row made from the SELECT in one place (``from_row``), instead of a dict passed on.

Why partial rows and not always the whole row: the leader's tick, the lease gate and the trigger
ticks read a handful of columns of every deployment (the lease gate on every lease); ``SELECT *``
would carry the policy, limits and placement JSON through each. The SELECT's column list is
``columns(Type)``, so the query and the fields cannot drift apart; tests/unit/test_domain_rows.py
checks every field is a column of its table. Built like agen.domain.rows (one ``itemgetter``, one
``tuple.__new__``), so a hot path pays no more than for a dict.

A function that only needs a deployment's name takes either the whole row or the partial one
(``DeploymentRow | DeploymentRef``): both carry the same fields under the same names.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

from agen.domain.rows import _enum, _reader
from agen.domain.states import DeploymentKind, TaskState


@functools.cache
def columns(row_type: Any, alias: str = "") -> str:
    """The SELECT list of a partial row (``id, namespace, name``), each prefixed by ``alias.``."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + f for f in row_type._fields)


class DeploymentRef(NamedTuple):
    """Which deployment, and the definition it runs: what triggers, holds, delegation replies,
    task-input redaction and platform secrets read."""

    id: str
    namespace: str
    name: str
    definition_id: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> DeploymentRef:
        """The row of a SELECT of ``columns(DeploymentRef)`` (extra columns are ignored)."""
        return _READ_DEPLOYMENT_REF(row)


class DeploymentBudget(NamedTuple):
    """A deployment's daily budget (JSON text, as stored) and what the lease gate decides with it."""

    id: str
    namespace: str
    name: str
    kind: DeploymentKind
    budget: str = "{}"

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> DeploymentBudget:
        """The row of a SELECT of ``columns(DeploymentBudget)``."""
        return _READ_DEPLOYMENT_BUDGET(row)


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

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> DeploymentSizing:
        """The row of a SELECT of ``columns(DeploymentSizing)``."""
        return _READ_DEPLOYMENT_SIZING(row)


class DeploymentLimits(NamedTuple):
    """A deployment's per-run limits (JSON text, as stored), for GetActivity's warnings."""

    namespace: str
    name: str
    limits: str = "{}"

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> DeploymentLimits:
        """The row of a SELECT of ``columns(DeploymentLimits)``."""
        return _READ_DEPLOYMENT_LIMITS(row)


class TaskStatus(NamedTuple):
    """Where a task is: what a run's view and GetActivity read of the run's task."""

    id: str
    state: TaskState
    held: bool
    wait_for: str | None
    updated_ms: int

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TaskStatus:
        """The row of a SELECT of ``columns(TaskStatus)``."""
        return _READ_TASK_STATUS(row)


class TaskBrief(NamedTuple):
    """Whose task and where it is: what a progress report and an on-behalf token's check read."""

    id: str
    namespace: str
    deployment: str
    state: TaskState
    labels: str = "{}"  # JSON text, as stored
    submitted_by: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TaskBrief:
        """The row of a SELECT of ``columns(TaskBrief)``."""
        return _READ_TASK_BRIEF(row)


class TaskLineage(NamedTuple):
    """Where a task sits in its tree: what a child's submission inherits from its parent."""

    id: str
    root_task_id: str
    depth: int
    labels: str = "{}"  # JSON text, as stored

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TaskLineage:
        """The row of a SELECT of ``columns(TaskLineage)``."""
        return _READ_TASK_LINEAGE(row)


class TaskOrigin(NamedTuple):
    """Where a task came from: what an event trigger reads of the task behind an event, so a trigger
    never fires on its own task's events and a chain of triggers stays bounded."""

    id: str
    deployment_id: str
    source: str
    event_chain: int = 0

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TaskOrigin:
        """The row of a SELECT of ``columns(TaskOrigin)``."""
        return _READ_TASK_ORIGIN(row)


class RunUsage(NamedTuple):
    """What one task's run spent, for GetTaskTree's nodes."""

    task_id: str
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RunUsage:
        """The row of a SELECT of ``columns(RunUsage)``."""
        return _READ_RUN_USAGE(row)


class RunRef(NamedTuple):
    """A run and the root of its tree: what a delegating task's child is tied to."""

    id: str
    root_run_id: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RunRef:
        """The row of a SELECT of ``columns(RunRef)``."""
        return _READ_RUN_REF(row)


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


def _float(value: Any) -> float:
    return float(value or 0.0)


def _int(value: Any) -> int:
    return int(value or 0)


_READ_DEPLOYMENT_REF = _reader(
    DeploymentRef, DeploymentRef._fields, DeploymentRef._field_defaults, {}
)
_READ_DEPLOYMENT_BUDGET = _reader(
    DeploymentBudget,
    DeploymentBudget._fields,
    DeploymentBudget._field_defaults,
    {"kind": _enum(DeploymentKind)},
)
_READ_DEPLOYMENT_SIZING = _reader(
    DeploymentSizing,
    DeploymentSizing._fields,
    DeploymentSizing._field_defaults,
    {"kind": _enum(DeploymentKind), "paused": bool, "desired": int, "last_activity_ms": int},
)
_READ_DEPLOYMENT_LIMITS = _reader(
    DeploymentLimits, DeploymentLimits._fields, DeploymentLimits._field_defaults, {}
)
_READ_TASK_STATUS = _reader(
    TaskStatus,
    TaskStatus._fields,
    TaskStatus._field_defaults,
    {"state": _enum(TaskState), "held": bool, "updated_ms": int},
)
_READ_TASK_BRIEF = _reader(
    TaskBrief, TaskBrief._fields, TaskBrief._field_defaults, {"state": _enum(TaskState)}
)
_READ_TASK_LINEAGE = _reader(
    TaskLineage, TaskLineage._fields, TaskLineage._field_defaults, {"depth": int}
)
_READ_TASK_ORIGIN = _reader(
    TaskOrigin, TaskOrigin._fields, TaskOrigin._field_defaults, {"event_chain": _int}
)
_READ_RUN_USAGE = _reader(
    RunUsage,
    RunUsage._fields,
    RunUsage._field_defaults,
    {"cost_usd": _float, "input_tokens": _int, "output_tokens": _int},
)
_READ_RUN_REF = _reader(RunRef, RunRef._fields, RunRef._field_defaults, {})
