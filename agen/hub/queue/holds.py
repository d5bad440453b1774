"""Holds and the inbox: pause/resume a task or a deployment's tasks, wake waiting tasks.

A hold is lazy: leasing skips an effectively held task (held and no deadline or a
future one); a running task notices it through ``is_held`` at its next turn and
suspends with wait_for "resume", which only ResumeTask or the deadline sweep wakes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from agen.domain import UNFINISHED, DeploymentRef, TaskRow, TaskState, columns
from agen.errors import ConflictError, NotFoundError
from agen.hub.queue.tasks import URGENT, get_task, requeue, task_event
from agen.store import Tx, dumps, new_ulid

RESUME = "resume"


def _effectively_held(held: bool, held_until_ms: int | None, now_ms: int) -> bool:
    return bool(held) and (held_until_ms is None or held_until_ms > now_ms)


def _clear_hold(tx: Tx, task_id: str) -> None:
    tx.execute(
        "UPDATE tasks SET held = 0, held_until_ms = NULL, hold_reason = NULL, held_by = NULL,"
        " updated_ms = ? WHERE id = ?",
        (tx.now_ms, task_id),
    )


def _wake_if_resuming(tx: Tx, row: TaskRow, reason: str) -> bool:
    if row.state == TaskState.WAITING and row.wait_for == RESUME:
        requeue(tx, row, reason=reason, priority=URGENT)
        return True
    return False


def pause_task(
    tx: Tx, task_id: str, until_ms: int | None = None, reason: str | None = None
) -> TaskRow:
    """Hold an unfinished task (until ``until_ms``, or until resumed)."""
    row = get_task(tx, task_id)
    if row.state not in UNFINISHED:
        raise ConflictError(
            f"task {task_id} already ended ({row.state}); there is nothing to pause",
            task_id=task_id,
            state=str(row.state),
        )
    tx.execute(
        "UPDATE tasks SET held = 1, held_until_ms = ?, hold_reason = ?, held_by = 'task', updated_ms = ?"
        " WHERE id = ?",
        (until_ms, reason, tx.now_ms, task_id),
    )
    task_event(tx, row, "task.held", {"until_ms": until_ms, "reason": reason})
    return get_task(tx, task_id)


def resume_task(tx: Tx, task_id: str) -> TaskRow:
    """Clear a task's hold; a task suspended on "resume" is requeued at urgent priority."""
    row = get_task(tx, task_id)
    if row.state not in UNFINISHED:
        raise ConflictError(
            f"task {task_id} already ended ({row.state}); there is nothing to resume",
            task_id=task_id,
            state=str(row.state),
        )
    if not row.held and not (row.state == TaskState.WAITING and row.wait_for == RESUME):
        return row
    _clear_hold(tx, task_id)
    task_event(tx, row, "task.resumed", {"reason": "resumed"})
    _wake_if_resuming(tx, row, "resumed")
    return get_task(tx, task_id)


def _deployment(tx: Tx, deployment_id: str) -> DeploymentRef:
    dep = tx.row(
        DeploymentRef,
        f"SELECT {columns(DeploymentRef)} FROM deployments WHERE id = ?",
        (deployment_id,),
    )
    if dep is None:
        raise NotFoundError(
            f"deployment {deployment_id} not found; list deployments with `agen ps`",
            deployment_id=deployment_id,
        )
    return dep


def hold_deployment(
    tx: Tx, deployment_id: str, until_ms: int | None = None, reason: str | None = None
) -> int:
    """Hold every unfinished task of a deployment (not ones paused on their own); returns how many."""
    dep = _deployment(tx, deployment_id)
    n = tx.execute(
        "UPDATE tasks SET held = 1, held_until_ms = ?, hold_reason = ?, held_by = 'deployment', updated_ms = ?"
        " WHERE deployment_id = ? AND state IN ('queued', 'leased', 'running', 'waiting')"
        " AND (held = 0 OR held_by = 'deployment')",
        (until_ms, reason, tx.now_ms, deployment_id),
    )
    tx.event(
        dep.namespace,
        "deployment.held",
        deployment=dep.name,
        data={"tasks": n, "until_ms": until_ms, "reason": reason},
    )
    return n


def resume_deployment_hold(tx: Tx, deployment_id: str) -> int:
    """Clear the holds hold_deployment put in place (waking tasks suspended on them); returns how many."""
    dep = _deployment(tx, deployment_id)
    rows = tx.rows(
        TaskRow,
        "SELECT * FROM tasks WHERE deployment_id = ? AND held = 1 AND held_by = 'deployment'"
        " AND state IN ('queued', 'leased', 'running', 'waiting')",
        (deployment_id,),
    )
    for row in rows:
        _clear_hold(tx, row.id)
        _wake_if_resuming(tx, row, "deployment resumed")
    if rows:
        tx.event(
            dep.namespace,
            "deployment.resumed",
            deployment=dep.name,
            data={"tasks": len(rows)},
        )
    return len(rows)


def is_held(tx: Tx, task_id: str) -> bool:
    """Effective hold: held and (no deadline or a deadline still ahead). A passed deadline reads as not held."""
    row = tx.row(_Hold, f"SELECT {columns(_Hold)} FROM tasks WHERE id = ?", (task_id,))
    if row is None:
        raise NotFoundError(f"task {task_id} not found", task_id=task_id)
    return _effectively_held(row.held, row.held_until_ms, tx.now_ms)


class _Hold(NamedTuple):
    """A task's hold as stored (a passed deadline still reads held here)."""

    held: bool
    held_until_ms: int | None


def wake_expired_holds(tx: Tx, now_ms: int) -> list[str]:
    """End holds whose deadline passed; requeue tasks suspended on "resume". Returns the woken ids."""
    rows = tx.rows(
        TaskRow,
        "SELECT * FROM tasks WHERE held = 1 AND held_until_ms IS NOT NULL AND held_until_ms <= ?",
        (now_ms,),
    )
    woken: list[str] = []
    for row in rows:
        _clear_hold(tx, row.id)
        if row.state not in UNFINISHED:
            continue
        task_event(tx, row, "task.resumed", {"reason": "hold deadline passed"})
        if _wake_if_resuming(tx, row, "hold deadline passed"):
            woken.append(row.id)
    return woken


def inbox_matches(wait_for: str | None, kind: str, ref: str | None) -> bool:
    """Does an inbox row (kind, ref) satisfy a task's wait_for? "resume" only ResumeTask satisfies."""
    if not wait_for or wait_for == RESUME:
        return False
    if ref is not None and wait_for == f"{kind}:{ref}":
        return True
    return wait_for == kind or (wait_for == "children" and kind == "child")


def write_inbox(tx: Tx, task_id: str, kind: str, ref: str | None, payload: Any = None) -> str:
    """Record something for a task; wakes it (urgent, no attempt) when it waits for exactly this."""
    row = get_task(tx, task_id)
    inbox_id = new_ulid()
    tx.execute(
        "INSERT INTO run_inbox (id, task_id, kind, ref, payload, created_ms) VALUES (?,?,?,?,?,?)",
        (inbox_id, task_id, kind, ref, None if payload is None else dumps(payload), tx.now_ms),
    )
    if row.state == TaskState.WAITING and inbox_matches(row.wait_for, kind, ref):
        requeue(tx, row, reason="inbox", priority=URGENT, data={"kind": kind, "ref": ref})
    return inbox_id
