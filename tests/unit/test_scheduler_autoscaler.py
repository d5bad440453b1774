"""The autoscaler formula and its hold rules, as a table."""

from __future__ import annotations

from typing import Any

import pytest

from agen.errors import InvalidError
from agen.hub.leader.autoscaler import (
    DEFAULT_IDLE_TIMEOUT_MS,
    PRESSURE_IDLE_MS,
    ScaleInput,
    ScalePolicy,
    decide,
    want_for,
)

POOL = ScalePolicy(
    min=1, max=10, target_queue_per_instance=2, idle_timeout_ms=DEFAULT_IDLE_TIMEOUT_MS
)
RESERVE = ScalePolicy(min=0, max=5, target_queue_per_instance=1, reserve=2)
TASK = ScalePolicy.from_json("task", {"min": 0, "max": 3})
NOW = 10_000_000


@pytest.mark.parametrize(
    ("kind", "policy", "load", "urgent", "want"),
    [
        ("pool", POOL, 0, 0, 1),  # clamp to min
        ("pool", POOL, 1, 0, 1),  # ceil(1/2)
        ("pool", POOL, 5, 0, 3),  # ceil(5/2)
        ("pool", POOL, 100, 0, 10),  # clamp to max
        ("pool", RESERVE, 0, 0, 0),  # reserve has no effect without urgent/high load
        ("pool", RESERVE, 1, 1, 3),  # urgent 1 + reserve 2
        ("pool", RESERVE, 4, 1, 4),  # formula already above the reserve floor
        ("pool", RESERVE, 4, 4, 5),  # urgent 4 + 2 capped by max
        ("task", TASK, 2, 0, 2),  # one instance per task
        ("task", TASK, 9, 0, 3),  # up to max
        (
            "task",
            ScalePolicy(min=0, max=3, target_queue_per_instance=5),
            2,
            0,
            2,
        ),  # target ignored for task kind
    ],
)
def test_want_follows_the_formula(
    kind: str, policy: ScalePolicy, load: int, urgent: int, want: int
) -> None:
    assert want_for(kind, policy, load, urgent) == want


def inp(**kw: Any) -> ScaleInput:
    base: dict[str, object] = {
        "kind": "pool",
        "policy": POOL,
        "current": 1,
        "load": 0,
        "now_ms": NOW,
        "last_activity_ms": NOW,
    }
    base.update(kw)
    return ScaleInput(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("case", "given", "desired", "reason"),
    [
        ("scale up at once", inp(load=6), 3, "up"),
        ("steady", inp(load=2), 1, "steady"),
        (
            "busy deployment does not shrink",
            inp(current=5, load=2, last_activity_ms=NOW - 1000),
            5,
            "hold_idle",
        ),
        (
            "idle past timeout shrinks to want",
            inp(current=5, load=0, last_activity_ms=NOW - DEFAULT_IDLE_TIMEOUT_MS),
            1,
            "down",
        ),
        (
            "manual scale counts as activity",
            inp(
                current=5,
                last_activity_ms=NOW - 10 * DEFAULT_IDLE_TIMEOUT_MS,
                manual_scale_ms=NOW - 60_000,
            ),
            5,
            "hold_idle",
        ),
        (
            "manual scale holds only one idle window",
            inp(current=5, last_activity_ms=0, manual_scale_ms=NOW - DEFAULT_IDLE_TIMEOUT_MS),
            1,
            "down",
        ),
        (
            "task deployment stops as soon as its queue is empty",
            inp(kind="task", policy=TASK, current=3, load=0, last_activity_ms=NOW),
            0,
            "down",
        ),
        ("paused goes to 0", inp(current=4, load=9, paused=True), 0, "paused"),
        ("spent budget holds at 0", inp(current=4, load=9, budget_held=True), 0, "budget"),
        (
            "provider hold blocks scale-up",
            inp(current=1, load=9, provider_held=True),
            1,
            "provider_hold",
        ),
        (
            "pressure shrinks after one idle minute",
            inp(current=5, last_activity_ms=NOW - PRESSURE_IDLE_MS, pressure=True),
            1,
            "pressure",
        ),
        (
            "pressure waits for the idle minute",
            inp(current=5, last_activity_ms=NOW - 1000, pressure=True),
            5,
            "hold_idle",
        ),
        (
            "policy max lowered applies at once",
            inp(current=50, load=100, last_activity_ms=NOW),
            10,
            "steady",
        ),
        # A2A saturation: callers wait on full instances; the queue (2 tasks, target 2) wants 1.
        ("saturation adds one instance", inp(current=1, load=2, saturated_want=2), 2, "up"),
        (
            "saturation is capped by max",
            inp(policy=ScalePolicy(min=1, max=2, target_queue_per_instance=2), saturated_want=3),
            2,
            "up",
        ),
        ("saturation never lowers the queue's want", inp(load=12, saturated_want=2), 6, "up"),
        (
            "task deployments are not scaled by A2A saturation",
            inp(kind="task", policy=TASK, current=1, load=1, saturated_want=2),
            1,
            "steady",
        ),
        (
            "a paused deployment stays at 0 however saturated",
            inp(current=0, paused=True, saturated_want=2),
            0,
            "paused",
        ),
    ],
)
def test_decide_scales_up_at_once_and_down_only_when_idle(
    case: str, given: ScaleInput, desired: int, reason: str
) -> None:
    got = decide(given)
    assert (got.desired, got.reason) == (desired, reason), case


def test_policy_defaults_and_parsing() -> None:
    assert ScalePolicy.from_json("pool", {}).idle_timeout_ms == DEFAULT_IDLE_TIMEOUT_MS
    assert ScalePolicy.from_json("task", {}).idle_timeout_ms == 0
    assert ScalePolicy.from_json("pool", {"idle_timeout": "90s"}).idle_timeout_ms == 90_000
    assert (
        ScalePolicy.from_json(
            "pool", {"idleTimeoutMs": 5, "targetQueuePerInstance": 4}
        ).target_queue_per_instance
        == 4
    )
    assert ScalePolicy.from_json("singleton", {"min": 0, "max": 3}).max == 1
    with pytest.raises(InvalidError, match=r"scale\.max"):
        ScalePolicy.from_json("pool", {"max": -1})
    with pytest.raises(InvalidError, match="idle_timeout"):
        ScalePolicy.from_json("pool", {"idle_timeout": "soon"})
