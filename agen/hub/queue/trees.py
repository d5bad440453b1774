"""Task trees (seed 000 §6 "Parent-close policy", "Tree queries", "Tree-wide cancel", "Hold",
"Graceful cancel"): what a task's end does to its children, and cancel/hold over a whole tree.

Every function is a transaction function. A tree is every task sharing a ``root_task_id`` (a task
with no parent is its own root), so a tree is one indexed query, never a parent-by-parent walk.

``on_parent_end`` runs inside the terminal path (``lease._finished``), in the same transaction as
the parent's end: a crash can never leave a parent ended with its joined children still running.
A graceful cancel is durable too: the wrap-up deadline is the task's ``cancel_at_ms``, which the
leader's tick enforces (``cancel_overdue``) even if the caller that asked went away.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, NamedTuple

from agen.domain import TaskRow
from agen.hub.queue.holds import pause_task, resume_task, write_inbox
from agen.hub.queue.lease import cancel_task
from agen.hub.queue.tasks import LIVE, UNFINISHED, UNFINISHED_SQL, TaskId, get_task, task_event
from agen.store import Tx
from agen.store.records import Count

DEFAULT_GRACE_S = 20.0
MAX_GRACE_S = 300.0
CANCEL_KIND = (
    "cancel"  # the run_inbox kind a graceful cancel writes (the runner asks for a wrap-up)
)


def unfinished_children(tx: Tx, task_ids: list[str]) -> dict[str, int]:
    """How many direct children of each task are still unfinished (a parent's "waiting on 3 children")."""
    if not task_ids:
        return {}
    marks = ",".join("?" * len(task_ids))
    return {
        r.parent_task_id: r.n
        for r in tx.rows(
            _ChildCount,
            f"SELECT parent_task_id, COUNT(*) AS n FROM tasks WHERE parent_task_id IN ({marks})"
            f" AND {UNFINISHED_SQL} GROUP BY parent_task_id",
            task_ids,
        )
    }


class _ChildCount(NamedTuple):
    parent_task_id: str
    n: Count


def root_of(tx: Tx, task_id: str) -> str:
    return get_task(tx, task_id).root_task_id


def tree_rows(tx: Tx, task_id: str) -> list[TaskRow]:
    """Every task of the tree ``task_id`` belongs to, in submission order (a parent before its children)."""
    return tx.rows(
        TaskRow, "SELECT * FROM tasks WHERE root_task_id = ? ORDER BY seq", (root_of(tx, task_id),)
    )


def _scope(tx: Tx, task_id: str, tree: bool) -> list[TaskRow]:
    if not tree:
        return [get_task(tx, task_id)]
    return tx.rows(
        TaskRow,
        f"SELECT * FROM tasks WHERE root_task_id = ? AND {UNFINISHED_SQL} ORDER BY depth, seq",
        (root_of(tx, task_id),),
    )


def tree_unfinished(tx: Tx, task_id: str) -> list[str]:
    """Ids of every unfinished task of the tree ``task_id`` belongs to."""
    return [r.id for r in _scope(tx, task_id, True)]


def cancel_scope(
    tx: Tx, task_id: str, *, tree: bool, by: str | None, reason: str | None = None
) -> list[str]:
    """Hard cancel ``task_id`` (``tree``: every unfinished task of its tree, async children too).

    Each task goes through the one terminal path, so on_parent_end cascades as usual; a task that
    cascade already ended moments earlier in this transaction is skipped, not cancelled twice.
    Returns the ids this call ended (for the in-process stop hint).
    """
    ended: list[str] = []
    for row in _scope(tx, task_id, tree):
        if get_task(tx, row.id).state in UNFINISHED:
            cancel_task(tx, row.id, by=by, reason=reason)
            ended.append(row.id)
    return ended


def begin_graceful_cancel(
    tx: Tx,
    task_id: str,
    *,
    tree: bool,
    grace_ms: int,
    by: str | None,
    reason: str | None = None,
) -> list[str]:
    """Graceful cancel: each leased/running task of the scope gets a "cancel" inbox row (its run is asked
    to wrap up and call finish) and a deadline ``cancel_at_ms``; a queued or waiting task has no live
    turn to give a last chance to, so it is cancelled at once. Returns the ids still wrapping up.

    Over a tree, a task waiting on children of its own is not cancelled at once (on_parent_end would
    then stop those children without their wrap-up turn): it gets the wrap-up request too, and its run
    reads it if a child's end wakes it within the grace period."""
    rows = _scope(tx, task_id, tree)
    parents = unfinished_children(tx, [r.id for r in rows]) if tree else {}
    live: list[str] = []
    rest: list[str] = []
    for row in rows:
        (live if row.state in LIVE or parents.get(row.id) else rest).append(row.id)
    for tid in live:
        request_wrap_up(tx, tid, grace_ms=grace_ms, by=by, reason=reason or "cancelled")
    for tid in rest:
        if get_task(tx, tid).state in UNFINISHED:
            cancel_scope(tx, tid, tree=False, by=by, reason=reason)
    return live


def request_wrap_up(
    tx: Tx,
    task_id: str,
    *,
    grace_ms: int,
    by: str | None,
    reason: str,
    interrupt: bool = False,
) -> None:
    """Ask a running task to wrap up within ``grace_ms`` (graceful cancel, interrupt); an earlier, shorter
    deadline already set stays. Its run gets one last turn and ends cancelled (``interrupt``: its
    outcome's reason says interrupted)."""
    row = get_task(tx, task_id)
    deadline = tx.now_ms + grace_ms
    payload: dict[str, Any] = {"reason": reason, "grace_s": grace_ms / 1000, "by": by}
    if interrupt:
        payload["interrupt"] = True
    write_inbox(tx, task_id, CANCEL_KIND, by, payload)
    tx.execute(
        "UPDATE tasks SET cancel_at_ms = ?, updated_ms = ? WHERE id = ?"
        " AND (cancel_at_ms IS NULL OR cancel_at_ms > ?)",
        (deadline, tx.now_ms, task_id, deadline),
    )
    task_event(tx, row, "task.cancelling", {"by": by, "reason": reason, "cancel_at_ms": deadline})


def cancel_overdue(
    tx: Tx, now_ms: int, *, deployment_ids: Collection[str] | None = None
) -> list[str]:
    """The leader's sweep: a task still unfinished past its graceful cancel deadline is stopped.
    ``deployment_ids``: only those deployments' tasks (an embedded one-shot's scope)."""
    sql = f"SELECT id FROM tasks WHERE cancel_at_ms IS NOT NULL AND cancel_at_ms <= ? AND {UNFINISHED_SQL}"
    params: list[Any] = [now_ms]
    if deployment_ids is not None:
        ids = sorted(deployment_ids)
        sql += f" AND deployment_id IN ({','.join('?' * len(ids)) or 'NULL'})"
        params += ids
    rows = tx.rows(TaskId, sql, params)
    ended: list[str] = []
    for r in rows:
        ended += cancel_scope(
            tx,
            r.id,
            tree=False,
            by="hub",
            reason="graceful cancel: the grace period ended before the run finished",
        )
    return ended


def unfinished(tx: Tx, task_ids: list[str]) -> list[str]:
    if not task_ids:
        return []
    marks = ",".join("?" * len(task_ids))
    return [
        r.id
        for r in tx.rows(
            TaskId, f"SELECT id FROM tasks WHERE id IN ({marks}) AND {UNFINISHED_SQL}", task_ids
        )
    ]


def pause_tree(
    tx: Tx, task_id: str, until_ms: int | None = None, reason: str | None = None
) -> list[str]:
    """Hold every unfinished task of the tree (async children too: an explicit hold is not the cascade)."""
    rows = _scope(tx, task_id, True)
    for row in rows:
        pause_task(tx, row.id, until_ms, reason)
    return [r.id for r in rows]


def resume_tree(tx: Tx, task_id: str) -> list[str]:
    """End the hold on every unfinished task of the tree; tasks suspended on it are requeued."""
    rows = _scope(tx, task_id, True)
    for row in rows:
        resume_task(tx, row.id)
    return [r.id for r in rows]
