"""Random triggers: ``count`` moments a day inside a window, at least ``minGap`` apart.

The plan for a day is seeded by namespace/deployment/trigger/date, so showing a trigger's
planned times and firing them later always agree, with nothing persisted.
"""

from __future__ import annotations

import hashlib
import random as _random
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from agen.bundle._base import window_minutes
from agen.bundle.cron import zone as load_zone
from agen.bundle.triggers import RandomTrigger
from agen.util.duration import parse_duration_ms

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _local_ms(day: date, minute: float, tz: ZoneInfo) -> int:
    """UTC ms of ``minute`` minutes after local midnight of ``day`` (wall clock, DST-aware)."""
    whole = int(minute)
    seconds = round((minute - whole) * 60)
    # Build from wall-clock fields so a DST change inside the window keeps local times honest.
    wall = datetime.combine(day, datetime.min.time()) + timedelta(minutes=whole, seconds=seconds)
    local = wall.replace(tzinfo=tz, fold=0)
    return int(local.astimezone(UTC).timestamp() * 1000)


def planned_times_ms(
    spec: RandomTrigger, *, namespace: str, deployment: str, day: date
) -> list[int]:
    """The UTC ms times this trigger fires for the window starting on local ``day`` (sorted)."""
    tz = load_zone(spec.zone or "UTC")
    if spec.days and DAY_NAMES[day.weekday()] not in spec.days:
        return []
    start_min, end_min = window_minutes(spec.window)
    if end_min <= start_min:
        end_min += 24 * 60  # the window wraps past midnight
    length = float(end_min - start_min)
    gap = parse_duration_ms(spec.min_gap) / 60_000 if spec.min_gap else 0.0
    if spec.count > 1:
        gap = min(gap, length / (spec.count - 1) * 0.999)
    free = max(0.0, length - gap * (spec.count - 1))
    seed = hashlib.sha256(
        f"{namespace}/{deployment}/{spec.name}/{day.isoformat()}".encode()
    ).digest()
    rng = _random.Random(int.from_bytes(seed[:8], "big"))
    offsets = sorted(rng.random() * free for _ in range(spec.count))
    minutes = [start_min + off + i * gap for i, off in enumerate(offsets)]
    return [_local_ms(day, m, tz) for m in minutes]


def local_day(ms: int, spec: RandomTrigger) -> date:
    tz = load_zone(spec.zone or "UTC")
    return datetime.fromtimestamp(ms / 1000, tz=UTC).astimezone(tz).date()


def candidate_times_ms(
    spec: RandomTrigger, *, namespace: str, deployment: str, now_ms: int
) -> list[int]:
    """Yesterday's and today's planned times (only yesterday's can still be due and unfired)."""
    today = local_day(now_ms, spec)
    out: list[int] = []
    for day in (today - timedelta(days=1), today):
        out.extend(planned_times_ms(spec, namespace=namespace, deployment=deployment, day=day))
    return sorted(out)


def next_planned_ms(
    spec: RandomTrigger, *, namespace: str, deployment: str, after_ms: int
) -> int | None:
    """The first planned time strictly after ``after_ms`` (looks up to 8 days ahead)."""
    day = local_day(after_ms, spec) - timedelta(days=1)
    for i in range(9):
        for t in planned_times_ms(
            spec, namespace=namespace, deployment=deployment, day=day + timedelta(days=i)
        ):
            if t > after_ms:
                return t
    return None
