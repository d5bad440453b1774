"""The autoscaler formula (seed 000 §5 "Autoscaler"), as pure functions.

want = clamp(ceil(load / target_queue_per_instance), min, max); ``reserve`` raises the
floor to urgent_or_high_load + reserve (capped by max) only while such load exists;
task deployments want one instance per task. A2A callers waiting on full instances
(a Nest's saturation report) raise a pool or singleton to one more than its live
instances, capped by max. Scale up at once, down only after idle_timeout without
activity (a manual scale counts as activity), or after one idle minute when
capacity pressure asks for room.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from agen.errors import InvalidError
from agen.util.duration import parse_duration_ms

DEFAULT_IDLE_TIMEOUT_MS = 5 * 60_000
PRESSURE_IDLE_MS = 60_000


@dataclass(frozen=True)
class ScalePolicy:
    """deployments.scale: {min, max, target_queue_per_instance, idle_timeout_ms, max_concurrency, reserve}."""

    min: int = 0
    max: int = 1
    target_queue_per_instance: int = 1
    idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS
    max_concurrency: int = 1
    reserve: int = 0

    @classmethod
    def from_json(cls, kind: str, scale: dict[str, Any] | None) -> ScalePolicy:
        """Read a stored policy, filling kind defaults (idle timeout 0 for task deployments).

        Accepts snake_case or camelCase keys; idle_timeout as milliseconds (``idle_timeout_ms``)
        or a Go-style duration string (``idle_timeout: "5m"``). A singleton's max is 1.
        """
        s = scale or {}

        def pick(*keys: str) -> Any:
            return next((s[k] for k in keys if s.get(k) is not None), None)

        def whole(value: Any, default: int, name: str) -> int:
            if value is None:
                return default
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InvalidError(
                    f"scale.{name} must be a whole number >= 0 (got {value!r})",
                    field=f"scale.{name}",
                )
            return int(value)

        idle_default = 0 if kind == "task" else DEFAULT_IDLE_TIMEOUT_MS
        idle_raw = pick("idle_timeout_ms", "idleTimeoutMs")
        if idle_raw is None:
            text = pick("idle_timeout", "idleTimeout")
            if isinstance(text, str):
                try:
                    idle_raw = parse_duration_ms(text)
                except ValueError as e:
                    raise InvalidError(
                        f"scale.idle_timeout: {e}", field="scale.idle_timeout"
                    ) from e
            else:
                idle_raw = text
        lo = whole(pick("min"), 0, "min")
        hi = whole(pick("max"), max(1, lo), "max")
        if kind == "singleton":
            hi = min(hi, 1)
        lo = min(lo, hi)
        return cls(
            min=lo,
            max=hi,
            target_queue_per_instance=max(
                1,
                whole(
                    pick("target_queue_per_instance", "targetQueuePerInstance"),
                    1,
                    "target_queue_per_instance",
                ),
            ),
            idle_timeout_ms=whole(idle_raw, idle_default, "idle_timeout_ms"),
            max_concurrency=max(
                1, whole(pick("max_concurrency", "maxConcurrency"), 1, "max_concurrency")
            ),
            reserve=whole(pick("reserve"), 0, "reserve"),
        )


@dataclass(frozen=True)
class ScaleInput:
    """What the autoscaler knows about one deployment at one tick."""

    kind: str
    policy: ScalePolicy
    current: int  # deployments.desired now
    load: int  # due queued + leased + running tasks
    urgent_load: int = 0  # urgent/high share of load
    paused: bool = False
    last_activity_ms: int = 0
    manual_scale_ms: int | None = None
    now_ms: int = 0
    pressure: bool = False  # capacity pressure on a Nest this deployment holds instances on
    budget_held: bool = False  # daily budget spent: held at 0
    provider_held: bool = False  # provider account held: no scale-up for queued tasks
    saturated_want: int = 0  # a fresh saturation report: live instances + 1 (0: none)


@dataclass(frozen=True)
class ScaleDecision:
    desired: int
    want: int
    reason: str  # up, down, hold_idle, steady, paused, budget, provider_hold, pressure


def want_for(kind: str, policy: ScalePolicy, load: int, urgent_load: int = 0) -> int:
    """The formula alone: how many instances this load wants (before idle and hold rules)."""
    per = 1 if kind == "task" else policy.target_queue_per_instance
    want = _clamp(math.ceil(max(0, load) / per), policy.min, policy.max)
    if urgent_load > 0 and policy.reserve > 0:
        want = max(want, min(policy.max, urgent_load + policy.reserve))
    return want


def _clamp(n: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, n))


def decide(inp: ScaleInput) -> ScaleDecision:
    """The desired count for this tick: up at once, down only once idle (or pressed and idle 1 min)."""
    p = inp.policy
    if inp.paused:
        return ScaleDecision(0, 0, "paused")
    if inp.budget_held:
        return ScaleDecision(0, 0, "budget")
    want = want_for(inp.kind, p, inp.load, inp.urgent_load)
    if inp.saturated_want > 0 and inp.kind != "task":  # task deployments serve the queue, not A2A
        want = max(want, min(p.max, inp.saturated_want))
    current = _clamp(inp.current, p.min, p.max)
    if want > current:
        if inp.provider_held:
            return ScaleDecision(current, want, "provider_hold")
        return ScaleDecision(want, want, "up")
    if want == current:
        return ScaleDecision(current, want, "steady")
    idle_for = inp.now_ms - max(inp.last_activity_ms, inp.manual_scale_ms or 0)
    if idle_for >= p.idle_timeout_ms:
        return ScaleDecision(want, want, "down")
    if inp.pressure and idle_for >= PRESSURE_IDLE_MS:
        return ScaleDecision(want, want, "pressure")
    return ScaleDecision(current, want, "hold_idle")
