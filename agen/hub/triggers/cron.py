"""Cron window planning: which windows are due now, which were missed, deterministic jitter.

Pure functions of (schedule, cursor, now), so every leader and every re-evaluation agrees; the
Tx side (agen.hub.triggers.fire) turns a plan into trigger events and tasks.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass, field

from agen.bundle.cron import Schedule

GRACE_MS = 60_000
"""A window fires if the leader evaluates it within this long after it is due (plus jitter)."""

MAX_LOOKBACK_MS = 7 * 86_400_000
"""Windows older than this (a Hub down for a week) are not enumerated one by one."""

MAX_RECORDED = 100
"""At most this many late windows are recorded per evaluation; older ones are only counted."""


def jitter_offset_ms(
    namespace: str, deployment: str, trigger: str, due_ms: int, jitter_ms: int
) -> int:
    """A deterministic offset in [0, jitter_ms] per window, so re-evaluating a window is idempotent."""
    if jitter_ms <= 0:
        return 0
    digest = hashlib.sha256(f"{namespace}/{deployment}/{trigger}/{due_ms}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (jitter_ms + 1)


@dataclass(frozen=True)
class Window:
    due_ms: int
    fire_at_ms: int


@dataclass
class CronPlan:
    """What one evaluation of a trigger decided."""

    on_time: list[Window] = field(default_factory=list)
    late: list[Window] = field(default_factory=list)
    uncounted_late: int = 0
    """Late windows not listed in ``late`` (beyond MAX_RECORDED); -1 when beyond MAX_LOOKBACK_MS."""
    cursor_ms: int | None = None
    """The last window this evaluation settled (becomes the trigger's last_due)."""
    next_due_ms: int | None = None

    def catch_up(self, now_ms: int, catch_up_window_ms: int | None) -> Window | None:
        """The latest late window, if it may still be fired as a catch-up."""
        if not self.late:
            return None
        latest = self.late[-1]
        if catch_up_window_ms is not None and now_ms - latest.due_ms > catch_up_window_ms:
            return None
        return latest


def plan_windows(
    schedule: Schedule,
    *,
    namespace: str,
    deployment: str,
    trigger: str,
    cursor_ms: int | None,
    active_since_ms: int,
    now_ms: int,
    jitter_ms: int = 0,
) -> CronPlan:
    """Settle every window after ``cursor_ms`` (and at or after ``active_since_ms``) that is ready.

    A window is ready once ``now`` passes its jittered fire time; ready windows within GRACE_MS
    are on time, older ones are late (missed, or a catch-up candidate). The first window that is
    not ready yet becomes ``next_due_ms``; it and later windows are left for a later evaluation.
    """
    plan = CronPlan(cursor_ms=cursor_ms)
    start = active_since_ms - 1 if cursor_ms is None else max(cursor_ms, active_since_ms - 1)
    floor = now_ms - MAX_LOOKBACK_MS
    if schedule.every_ms is not None:
        floor = max(floor, now_ms - (MAX_RECORDED + 1) * schedule.every_ms - GRACE_MS - jitter_ms)
    if start < floor:
        if schedule.every_ms is not None:
            first = schedule.next_after_ms(start)
            last_skipped = schedule.next_after_ms(floor) - schedule.every_ms
            plan.uncounted_late = max(0, (last_skipped - first) // schedule.every_ms + 1)
        else:
            plan.uncounted_late = -1
        start = floor
    recorded: deque[Window] = deque(maxlen=MAX_RECORDED)
    due = schedule.next_after_ms(start)
    while due <= now_ms:
        fire_at = due + jitter_offset_ms(namespace, deployment, trigger, due, jitter_ms)
        if fire_at > now_ms:
            break
        window = Window(due, fire_at)
        if now_ms - fire_at <= GRACE_MS:
            plan.on_time.append(window)
        else:
            if len(recorded) == recorded.maxlen and plan.uncounted_late >= 0:
                plan.uncounted_late += 1
            recorded.append(window)
        plan.cursor_ms = due
        due = schedule.next_after_ms(due)
    plan.late = list(recorded)
    plan.next_due_ms = due
    return plan
