"""Task-kind deployments (seed 000 §4): one instance per task.

An instance of a ``task`` deployment is created for one task and exits when it finishes; the
autoscaler starts up to ``max`` of them at once for queued tasks. The Nest's instance stops
leasing after its one task, and the Hub enforces it too: it remembers which task each such
instance took (task_instances), so a second lease from that instance gets nothing.
"""

from __future__ import annotations

from agen.store import Tx

KEEP_MS = 7 * 24 * 3600 * 1000  # an instance lives minutes; a week of memory is plenty


def lease_limit(tx: Tx, instance_id: str | None, limit: int) -> int:
    """How many tasks this instance of a task deployment may still lease: 1 before its task, 0 after."""
    if instance_id is None:
        return min(limit, 1)
    taken = tx.scalar("SELECT 1 FROM task_instances WHERE instance_id = ?", (instance_id,))
    return 0 if taken else min(limit, 1)


def remember(tx: Tx, deployment_id: str, instance_id: str | None, task_id: str) -> None:
    """Record the one task this instance leased (and forget instances older than a week)."""
    if instance_id is None:
        return
    now = tx.now_ms
    tx.execute("DELETE FROM task_instances WHERE created_ms < ?", (now - KEEP_MS,))
    tx.execute(
        "INSERT INTO task_instances (instance_id, deployment_id, task_id, created_ms) VALUES (?,?,?,?)"
        " ON CONFLICT DO NOTHING",
        (instance_id, deployment_id, task_id, now),
    )
