"""Firing triggers: one transaction records the trigger event and queues the task.

Exactly-once comes from two unique constraints working together: trigger events are unique
per (deployment, trigger, due) and the task's idempotency key is ``<kind>:<trigger>:<due>``,
so two leaders (or two ticks) evaluating the same window produce one task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agen.domain import DeploymentRef
from agen.errors import RateLimitedError
from agen.hub.queue import NewTask, submit_task
from agen.store import Tx, dumps, new_ulid

UNFINISHED = ("queued", "leased", "running", "waiting")


@dataclass
class Fired:
    """What one firing attempt did: fired (task_id), duplicate (already fired), or skipped."""

    status: str
    task_id: str | None = None
    reason: str | None = None


@dataclass
class TickReport:
    """What a leader tick did to triggers (for logs, tests and the TUI)."""

    fired: list[str] = field(default_factory=list)
    missed: int = 0
    skipped: int = 0
    rejected: int = 0
    merged: int = 0


def task_input(trigger_input: Any, extra: str | None = None) -> str:
    """The task input: the trigger's input (text as is, anything else as JSON), then ``extra``."""
    if trigger_input is None:
        base = ""
    elif isinstance(trigger_input, str):
        base = trigger_input
    else:
        base = dumps(trigger_input)
    if extra:
        return f"{base}\n\n{extra}" if base else extra
    return base


def record_event(
    tx: Tx,
    dep: DeploymentRef,
    trigger: str,
    status: str,
    *,
    due_ms: int | None = None,
    task_id: str | None = None,
    reason: str | None = None,
) -> bool:
    """Insert a trigger event; False when this (trigger, due) was already settled."""
    return (
        tx.execute(
            "INSERT INTO trigger_events (id, namespace, deployment_id, trigger_name, status, due_ms, task_id,"
            " reason, created_ms) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
            (
                new_ulid(),
                dep.namespace,
                dep.id,
                trigger,
                status,
                due_ms,
                task_id,
                reason,
                tx.now_ms,
            ),
        )
        == 1
    )


class _State(NamedTuple):
    state: str


def overlap_refusal(
    tx: Tx, dep: DeploymentRef, trigger: str, kind: str, overlap: str | None, spacing_ms: int
) -> str | None:
    """Why a window may not fire now (overlap / minStartSpacing), or None."""
    source = f"{kind}:{trigger}"
    if overlap in ("skip", "buffer_one"):
        states = [
            r.state
            for r in tx.rows(
                _State,
                "SELECT state FROM tasks WHERE deployment_id = ? AND source = ? AND state IN (?,?,?,?)",
                (dep.id, source, *UNFINISHED),
            )
        ]
        if overlap == "skip" and states:
            return "overlap: an earlier firing's task is unfinished"
        if overlap == "buffer_one" and (len(states) >= 2 or "queued" in states):
            return "overlap: one firing is already buffered behind the running one"
    if spacing_ms > 0:
        last = tx.scalar(
            "SELECT MAX(created_ms) FROM trigger_events WHERE deployment_id = ? AND trigger_name = ?"
            " AND status = 'fired'",
            (dep.id, trigger),
        )
        if last is not None and tx.now_ms - int(last) < spacing_ms:
            return "minStartSpacing: too soon after the previous firing"
    return None


def fire(
    tx: Tx,
    dep: DeploymentRef,
    trigger: str,
    *,
    kind: str,
    key: str,
    input: str,
    due_ms: int | None = None,
    labels: dict[str, str] | None = None,
    conversation_key: str | None = None,
    trust: str = "trusted",
    locks: list[str] | None = None,
    event_chain: int = 0,
    reason: str | None = None,
    max_queued: int | None = None,
    traceparent: str | None = None,
) -> Fired:
    """Record the firing and queue the task, exactly once per ``key`` (and per due time)."""
    if due_ms is not None and not record_event(
        tx, dep, trigger, "fired", due_ms=due_ms, reason=reason
    ):
        return Fired("duplicate", reason="this window was already settled")
    new = NewTask(
        namespace=dep.namespace,
        deployment_id=dep.id,
        deployment=dep.name,
        input=input,
        source=f"{kind}:{trigger}",
        conversation_key=conversation_key,
        labels=dict(labels or {}),
        idempotency_key=f"{kind}:{trigger}:{key}",
        trust=trust,
        locks=list(locks or []),
        event_chain=event_chain,
        submitted_by=f"trigger:{dep.name}/{trigger}",
        traceparent=traceparent,
    )
    try:
        row, created = submit_task(tx, new, max_queued=max_queued)
    except RateLimitedError as e:
        why = f"{e.details.get('stage', 'admission')}: {e.message}"
        if due_ms is not None:
            tx.execute(
                "UPDATE trigger_events SET status = 'skipped', reason = ? WHERE deployment_id = ?"
                " AND trigger_name = ? AND due_ms = ?",
                (why, dep.id, trigger, due_ms),
            )
        else:
            record_event(tx, dep, trigger, "skipped", reason=why)
        return Fired("skipped", reason=why)
    if due_ms is not None:
        tx.execute(
            "UPDATE trigger_events SET task_id = ? WHERE deployment_id = ? AND trigger_name = ? AND due_ms = ?",
            (row.id, dep.id, trigger, due_ms),
        )
    elif created:
        record_event(tx, dep, trigger, "fired", task_id=row.id, reason=reason)
    return Fired("fired" if created else "duplicate", task_id=row.id)
