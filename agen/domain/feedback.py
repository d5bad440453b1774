"""Feedback rows: one judgement on how a run went (-1.0..1.0), whoever gave it.

Three writers share this one insert: an operator (RecordFeedback, ``by`` is the principal), the
runtime reviewer (``by: "reviewer"``, its grade, written with the run's checkpoint) and an
approval decision (``by: "approval"``, 1.0 approved / 0.0 denied, seed 000), so ``agen feedback
ls``, ``agen runs`` and an eval dataset built ``--from-feedback`` see them all in one place.
"""

from __future__ import annotations

from typing import Any

from agen.store.base import Tx, dumps, new_ulid

REVIEWER = "reviewer"
APPROVAL = "approval"


def insert_feedback(
    tx: Tx,
    *,
    namespace: str,
    deployment: str,
    run_id: str,
    task_id: str | None,
    digest: str | None,
    score: float,
    note: str | None,
    labels: dict[str, str],
    by: str | None,
    created_ms: int,
) -> dict[str, Any]:
    """Insert one row; the row as stored (``labels`` still a dict)."""
    row: dict[str, Any] = {
        "id": new_ulid(),
        "namespace": namespace,
        "deployment": deployment,
        "run_id": run_id,
        "task_id": task_id,
        "digest": digest,
        "score": max(-1.0, min(1.0, score)),
        "note": note[:4000] if note else note,
        "labels": dumps(labels),
        "by": by,
        "created_ms": created_ms,
    }
    tx.execute(
        f"INSERT INTO feedback ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
        list(row.values()),
    )
    return row
