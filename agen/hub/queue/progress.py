"""ReportProgress: a running task's latest progress, and a rate-limited ``task.progress`` event.

Low stakes by design (seed 000 §5, "Progress and query"): no lease fencing, a no-op on a task
that already ended; the column holds only the latest value and the event log is the history,
at most one event per task per 10-second bucket (a dedupe key), so a chatty agent cannot flood it.
"""

from __future__ import annotations

from typing import Any

from agen.domain import TaskBrief, columns
from agen.store import Tx, dumps, loads

BUCKET_MS = 10_000
TERMINAL = ("succeeded", "failed", "cancelled", "expired")


def report_progress(tx: Tx, task_id: str, progress: dict[str, Any]) -> bool:
    """Store ``progress`` on the task; returns False when the task is unknown or already ended."""
    task = tx.row(TaskBrief, f"SELECT {columns(TaskBrief)} FROM tasks WHERE id = ?", (task_id,))
    if task is None:
        return False
    if task.state in TERMINAL:
        return False
    value = dict(progress)  # when it was reported: tasks.updated_ms and the event's created_ms
    tx.execute(
        "UPDATE tasks SET progress = ?, updated_ms = ? WHERE id = ?",
        (dumps(value), tx.now_ms, task_id),
    )
    bucket = tx.now_ms // BUCKET_MS
    tx.event(
        task.namespace,
        "task.progress",
        deployment=task.deployment,
        task_id=task_id,
        labels=loads(task.labels, {}),
        data=value,
        dedupe_key=f"progress:{task_id}:{bucket}",
    )
    return True


__all__ = ["BUCKET_MS", "report_progress"]
