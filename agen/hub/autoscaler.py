"""The autoscaler formula (seed 000 §5 "Autoscaler"), as pure functions.

want = clamp(ceil(load / target_queue_per_instance), min, max); ``reserve`` raises the
floor to urgent_or_high_load + reserve (capped by max) only while such load exists;
task deployments want one instance per task. Scale up at once, down only after
idle_timeout without activity (a manual scale counts as activity), or after one
idle minute when capacity pressure asks for room.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
        """Read a stored policy, filling kind defaults (idle timeout 0 for task deployments)."""
        raise NotImplementedError


@dataclass(frozen=True)
class ScaleInput:
    """What the autoscaler knows about one deployment at one tick."""

    kind: str
    policy: ScalePolicy
    current: int                 # deployments.desired now
    load: int                    # due queued + leased + running tasks
    urgent_load: int = 0         # urgent/high share of load
    paused: bool = False
    last_activity_ms: int = 0
    manual_scale_ms: int | None = None
    now_ms: int = 0
    pressure: bool = False       # capacity pressure on a Nest this deployment holds instances on
    budget_held: bool = False    # daily budget spent: held at 0
    provider_held: bool = False  # provider account held: no scale-up for queued tasks


@dataclass(frozen=True)
class ScaleDecision:
    desired: int
    want: int
    reason: str                  # up, down, hold_idle, steady, paused, budget, provider_hold, pressure


def want_for(kind: str, policy: ScalePolicy, load: int, urgent_load: int = 0) -> int:
    """The formula alone: how many instances this load wants (before idle and hold rules)."""
    raise NotImplementedError


def decide(inp: ScaleInput) -> ScaleDecision:
    """The desired count for this tick."""
    raise NotImplementedError
