"""The leader records GetActivity's warnings as events (seed 000 §11), so `agen events`, event
triggers and notification targets see them, not only someone looking at the fleet view.

Each warning is announced once per occurrence through a dedupe key, so a leader ticking every
30 s (or two Hubs racing) writes it once: a run warning once per run (near_turn_limit,
near_run_budget) or per episode (quiet_run and waiting_approval, keyed by when the episode
began), a provider hold once per hold, a daily budget once per day, and the fleet-level
warnings that have no beginning of their own (queue_waiting, blocked_by_approval, burst,
model_errors, trigger_missed, webhook_rejected) at most once an hour while they last.
"""

from __future__ import annotations

from agen.hub.queue.budgets import utc_day
from agen.store import Tx
from agen.wire.observe import ActivityWarning

EVERY_MS = 30_000
HOUR_MS = 3_600_000
ONCE_PER_RUN = ("near_turn_limit", "near_run_budget")
PER_EPISODE = ("quiet_run", "waiting_approval", "provider_held")


def dedupe_key(w: ActivityWarning, now_ms: int) -> str:
    if w.kind in ONCE_PER_RUN:
        anchor = "run"
    elif w.kind in PER_EPISODE and w.since_ms is not None:
        anchor = str(w.since_ms)
    elif w.kind == "near_daily_budget":
        anchor = f"{utc_day(now_ms)}:{w.severity}"
    else:
        anchor = f"h{now_ms // HOUR_MS}"
    subject = w.data.get("account") or w.data.get("conversation_key") or ""
    return (
        f"activity:{w.kind}:{w.namespace}:{w.deployment or ''}:{w.run_id or ''}:{subject}:{anchor}"
    )


def record_warnings(tx: Tx, warnings: list[ActivityWarning], now_ms: int) -> int:
    """Write each warning not announced yet as an ``activity.<kind>`` event; how many were new."""
    new = 0
    for w in warnings:
        seq = tx.event(
            w.namespace,
            f"activity.{w.kind}",
            severity=w.severity,
            deployment=w.deployment,
            task_id=w.task_id,
            run_id=w.run_id,
            dedupe_key=dedupe_key(w, now_ms),
            data={"message": w.message, "since_ms": w.since_ms, **w.data},
        )
        new += seq is not None
    return new
