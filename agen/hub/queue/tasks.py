"""One task as the queue modules share it: reading, fencing, events, requeue, ending its run, its joined
children and the on_parent_end policies. Below every other queue module (the terminal path in ``lease``
and the tree operations in ``trees`` both read children here); the fleet, the triggers and the RPCs
use it too."""

from __future__ import annotations

from typing import Any, NamedTuple

from agen.domain import (
    LIVE,
    TERMINAL,
    UNFINISHED,
    Outcome,
    OutcomeStatus,
    RunStatus,
    TaskRow,
    columns,
)
from agen.errors import FencedError, NotFoundError
from agen.hub.events.deployment_log import write_log
from agen.hub.queue.locks import release_task_locks
from agen.store import Tx, dumps

SPAN_STATUS = {"succeeded": "ok", "cancelled": "cancelled"}  # a run's status as its span's

__all__ = ["LIVE", "TERMINAL", "UNFINISHED", "URGENT"]

URGENT = 0


class TaskId(NamedTuple):
    """A task's id, for the queries that select only ids."""

    id: str


CANCEL = "cancel"  # on_parent_end: the joined branch unwinds with its parent (the default)
ABANDON = "abandon"  # on_parent_end: the children run on
PARENT_END_POLICIES = (CANCEL, ABANDON)
UNFINISHED_SQL = "state IN ('queued', 'leased', 'running', 'waiting')"


def due_sql(alias: str = "") -> str:
    """SQL: the task's not_before has passed (or is unset); binds :now."""
    a = f"{alias}." if alias else ""
    return f"({a}not_before_ms IS NULL OR {a}not_before_ms <= :now)"


def held_sql(alias: str = "") -> str:
    """SQL: the task is effectively held (flag set, no deadline or one ahead); binds :now."""
    a = f"{alias}." if alias else ""
    return f"({a}held = 1 AND ({a}held_until_ms IS NULL OR {a}held_until_ms > :now))"


def get_task(tx: Tx, task_id: str) -> TaskRow:
    """The task; in a Postgres write its row stays locked to the transaction's end, since a write reads a
    task to change it (a completion or expiry committed meanwhile is waited for and seen)."""
    row = tx.row(TaskRow, f"SELECT * FROM tasks WHERE id = ?{tx.row_lock}", (task_id,))
    if row is None:
        raise NotFoundError(
            f"task {task_id} not found; list tasks with `agen tasks`", task_id=task_id
        )
    return row


def fenced_task(tx: Tx, task_id: str, lease_id: str) -> TaskRow:
    """The task if ``lease_id`` is its current live lease; FencedError otherwise."""
    row = get_task(tx, task_id)
    if row.lease_id != lease_id or row.state not in LIVE:
        raise stale_lease(row, lease_id)
    return row


def stale_lease(row: TaskRow, lease_id: str) -> FencedError:
    now = f"the task is {row.state}"
    if row.lease_id and row.lease_id != lease_id and row.state in LIVE:
        now += f" under lease {row.lease_id}"
    return FencedError(
        f"lease {lease_id} of task {row.id} is no longer current ({now}); it expired or the task "
        "was re-leased, cancelled or finished elsewhere — stop working on it and do not report it",
        task_id=row.id,
        lease_id=lease_id,
        state=str(row.state),
    )


def task_event(
    tx: Tx,
    task: TaskRow,
    type: str,
    data: dict[str, Any] | None = None,
    *,
    severity: str = "info",
) -> None:
    tx.event(
        task.namespace,
        type,
        severity=severity,
        deployment=task.deployment,
        task_id=task.id,
        labels=task.labels,  # the stored JSON text goes into the event as is (no decode + encode)
        data=data,
    )


def deployment_log(
    tx: Tx,
    task: TaskRow,
    message: str,
    *,
    level: str = "info",
    instance_id: str | None = None,
) -> None:
    """A line on the task's deployment's log (`agen logs`): releases and lease expiries."""
    write_log(tx, task.namespace, task.deployment, message, level=level, instance_id=instance_id)


def requeue(
    tx: Tx,
    task: TaskRow,
    *,
    reason: str,
    attempt_delta: int = 0,
    priority: int | None = None,
    event: str = "task.requeued",
    data: dict[str, Any] | None = None,
) -> None:
    """Put a leased/running/waiting task back in the queue; drops its lease and locks."""
    tx.execute(
        "UPDATE tasks SET state = 'queued', lease_id = NULL, lease_nest_id = NULL,"
        " lease_instance_id = NULL, lease_expires_ms = NULL, wait_for = NULL,"
        " priority = COALESCE(?, priority), attempts = MAX(0, attempts + ?), updated_ms = ?"
        " WHERE id = ?",
        (priority, attempt_delta, tx.now_ms, task.id),
    )
    release_task_locks(tx, task.id)
    task_event(tx, task, event, {"reason": reason, **(data or {})})


def fence_run(tx: Tx, task_id: str) -> None:
    """The task's lease was taken from its holder (it expired, or its Nest was voided): bump its
    unfinished run's epoch, so that holder, should it still be running somewhere (a partitioned
    Nest), writes nothing more to the run, not even the end it writes when it learns of the loss
    and stops; the next holder claims the run (epoch + 1 again) and resumes it."""
    tx.execute(
        "UPDATE runs SET epoch = epoch + 1, updated_ms = ? WHERE task_id = ? AND finished_ms IS NULL",
        (tx.now_ms, task_id),
    )


class _OpenRun(NamedTuple):
    """The unfinished run a task's end closes."""

    id: str
    namespace: str
    deployment: str


def end_run(tx: Tx, task_id: str, status: RunStatus, reason: str) -> int:
    """End the task's unfinished run and bump its epoch, so a host still running it is fenced off.

    The run's record ends here too, as if it had ended itself: its open spans (the run's own, one
    its host may still hold) are closed with the run's status, and ``run.finished`` is written, so
    ``agen trace`` shows it ended and the OTLP exporter sends it."""
    found = tx.row(
        _OpenRun,
        f"SELECT {columns(_OpenRun)} FROM runs WHERE task_id = ? AND finished_ms IS NULL",
        (task_id,),
    )
    if found is None:
        return 0
    outcome = Outcome.ended(OutcomeStatus(status), reason).stored()
    n = tx.execute(
        "UPDATE runs SET status = ?, outcome = COALESCE(outcome, ?), finished_ms = ?, updated_ms = ?,"
        " epoch = epoch + 1 WHERE id = ? AND finished_ms IS NULL",
        (status, dumps(outcome), tx.now_ms, tx.now_ms, found.id),
    )
    tx.execute(
        "UPDATE spans SET status = ?, ended_ms = ? WHERE run_id = ? AND ended_ms IS NULL",
        (SPAN_STATUS.get(status, "error"), tx.now_ms, found.id),
    )
    tx.event(
        found.namespace,
        "run.finished",
        deployment=found.deployment or None,
        task_id=task_id,
        run_id=found.id,
        data={"status": status, "outcome": outcome["status"], "reason": reason},
        severity="warning",
    )
    return n


def joined_unfinished_children(tx: Tx, task_id: str) -> list[TaskRow]:
    """Direct children still unfinished that are joined to this task (no reply_deployment: an async
    child replies into a conversation and is meant to outlive the task that started it)."""
    return tx.rows(
        TaskRow,
        f"SELECT * FROM tasks WHERE parent_task_id = ? AND reply_deployment IS NULL AND {UNFINISHED_SQL}"
        " ORDER BY seq",
        (task_id,),
    )
