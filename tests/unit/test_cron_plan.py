"""Cron window planning with an injected clock: DST, missed windows, catch-up, jitter."""

from __future__ import annotations

from datetime import UTC, datetime

from agen.bundle.cron import parse_schedule
from agen.hub.triggers.cron import GRACE_MS, jitter_offset_ms, plan_windows


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def iso(value: int) -> str:
    return datetime.fromtimestamp(value / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M")


def simulate(
    schedule: str, start: str, end: str, *, step_ms: int = 30_000, jitter_ms: int = 0
) -> list[int]:
    """A leader ticking every ``step_ms`` from start to end; returns the due times it fired."""
    sched = parse_schedule(schedule)
    now, stop = ms(start), ms(end)
    cursor: int | None = None
    fired: list[int] = []
    while now <= stop:
        plan = plan_windows(
            sched,
            namespace="ns",
            deployment="d",
            trigger="t",
            cursor_ms=cursor,
            active_since_ms=ms(start),
            now_ms=now,
            jitter_ms=jitter_ms,
        )
        assert not plan.late, f"a ticking leader missed {[iso(w.due_ms) for w in plan.late]}"
        fired += [w.due_ms for w in plan.on_time]
        cursor = plan.cursor_ms
        now += step_ms
    return fired


def test_fixed_time_in_a_cron_tz_zone_fires_once_across_spring_forward_and_fall_back() -> None:
    # Europe/Paris: 2025-03-30 02:00 -> 03:00 (02:30 does not exist); 2025-10-26 03:00 -> 02:00 (02:30 twice).
    spring = simulate("CRON_TZ=Europe/Paris 30 2 * * *", "2025-03-29T00:00", "2025-03-31T02:00")
    assert [iso(d) for d in spring] == ["2025-03-29T01:30", "2025-03-30T01:00", "2025-03-31T00:30"]
    autumn = simulate("CRON_TZ=Europe/Paris 30 2 * * *", "2025-10-25T00:00", "2025-10-27T03:00")
    assert [iso(d) for d in autumn] == ["2025-10-25T00:30", "2025-10-26T00:30", "2025-10-27T01:30"]


def test_hourly_in_a_cron_tz_zone_follows_real_hours_on_a_25_hour_day() -> None:
    fired = simulate(
        "CRON_TZ=Europe/Paris 0 * * * *", "2025-10-25T22:00", "2025-10-26T22:59", step_ms=60_000
    )
    assert len(fired) == 25
    assert len(set(fired)) == 25


def test_utc_is_the_default_zone() -> None:
    assert [iso(d) for d in simulate("30 2 * * *", "2025-03-30T00:00", "2025-03-30T03:00")] == [
        "2025-03-30T02:30"
    ]


def test_hub_down_across_three_windows_reports_them_late_and_catch_up_picks_the_latest() -> None:
    sched = parse_schedule("@hourly")
    fired_at = ms("2025-01-01T10:00")
    now = ms("2025-01-01T13:30")  # 11:00, 12:00 and 13:00 passed while the Hub was down
    plan = plan_windows(
        sched,
        namespace="ns",
        deployment="d",
        trigger="t",
        cursor_ms=fired_at,
        active_since_ms=ms("2025-01-01T00:00"),
        now_ms=now,
    )
    assert [iso(w.due_ms) for w in plan.late] == [
        "2025-01-01T11:00",
        "2025-01-01T12:00",
        "2025-01-01T13:00",
    ]
    assert plan.on_time == []
    assert plan.cursor_ms == ms("2025-01-01T13:00") and plan.next_due_ms == ms("2025-01-01T14:00")
    catch = plan.catch_up(now, None)
    assert catch is not None and iso(catch.due_ms) == "2025-01-01T13:00"
    assert plan.catch_up(now, 10 * 60_000) is None  # older than catchUpWindow


def test_a_window_is_on_time_only_within_a_minute_of_its_due_time() -> None:
    sched = parse_schedule("@hourly")
    due = ms("2025-01-01T11:00")
    common = dict(
        namespace="ns", deployment="d", trigger="t", cursor_ms=due - 3_600_000, active_since_ms=0
    )
    assert plan_windows(sched, now_ms=due + GRACE_MS, **common).on_time  # type: ignore[arg-type]
    assert plan_windows(sched, now_ms=due + GRACE_MS + 1, **common).late  # type: ignore[arg-type]
    assert not plan_windows(sched, now_ms=due - 1, **common).on_time  # type: ignore[arg-type]


def test_jitter_is_deterministic_per_window_and_within_its_bound() -> None:
    offsets = [
        jitter_offset_ms("ns", "d", "t", due, 30_000) for due in range(0, 3_600_000 * 50, 3_600_000)
    ]
    again = [
        jitter_offset_ms("ns", "d", "t", due, 30_000) for due in range(0, 3_600_000 * 50, 3_600_000)
    ]
    assert offsets == again
    assert all(0 <= o <= 30_000 for o in offsets)
    assert len(set(offsets)) > 40  # spread, not constant
    other = [
        jitter_offset_ms("ns", "d", "other", due, 30_000)
        for due in range(0, 3_600_000 * 50, 3_600_000)
    ]
    assert other != offsets  # seeded per trigger, so triggers on one schedule spread apart
    fired = simulate(
        "@every 1m", "2025-01-01T00:00", "2025-01-01T00:10", step_ms=1_000, jitter_ms=20_000
    )
    assert len(fired) == 10  # each window fires once, after its jittered time


def test_never_back_fills_before_the_trigger_became_active() -> None:
    sched = parse_schedule("*/5 * * * *")
    active = ms("2025-01-01T10:02")
    plan = plan_windows(
        sched,
        namespace="ns",
        deployment="d",
        trigger="t",
        cursor_ms=None,
        active_since_ms=active,
        now_ms=ms("2025-01-01T10:05:30"),
    )
    assert [iso(w.due_ms) for w in plan.on_time] == ["2025-01-01T10:05"] and not plan.late


def test_a_long_outage_records_a_bounded_number_of_windows() -> None:
    sched = parse_schedule("@every 1s")
    plan = plan_windows(
        sched,
        namespace="ns",
        deployment="d",
        trigger="t",
        cursor_ms=0,
        active_since_ms=0,
        now_ms=86_400_000,
    )
    assert len(plan.late) == 100
    assert plan.uncounted_late > 86_000
    assert plan.cursor_ms is not None and plan.cursor_ms >= 86_400_000 - GRACE_MS - 1000
