"""The leader's scheduler tick: autoscale, place instances on Nests, sweep the queue.

``schedule_tick`` is one transaction run by the Hub leader every tick; it checks the
leader epoch first so a stale leader's writes are refused. Placement is a pure
function: existing instances stay, surplus leaves the most loaded Nest first,
missing instances go to the Nest with the most free capacity (0 = unlimited).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agen.store import Tx

NEST_LOST_AFTER_MS = 30_000


@dataclass(frozen=True)
class NestView:
    id: str
    labels: dict[str, str]
    capacity: int                # 0 = unlimited


@dataclass(frozen=True)
class Demand:
    deployment_id: str
    desired: int
    labels: dict[str, str]       # placement.labels: a Nest must carry every one


@dataclass
class Placement:
    counts: dict[tuple[str, str], int]            # (deployment_id, nest_id) -> instances
    unplaced: dict[str, int]                      # deployment_id -> instances that fit nowhere
    full_nests: dict[str, set[str]] = field(default_factory=dict)  # deployment_id -> full eligible Nests


def place(demands: list[Demand], nests: list[NestView],
          current: dict[tuple[str, str], int]) -> Placement:
    """Where each deployment's instances go, starting from the current assignments."""
    raise NotImplementedError


@dataclass
class TickSummary:
    nests_lost: list[str] = field(default_factory=list)
    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    overdue: list[str] = field(default_factory=list)
    woken: list[str] = field(default_factory=list)
    scaled: dict[str, tuple[int, int]] = field(default_factory=dict)   # deployment -> (old, new)
    assignments_changed: int = 0
    unplaced: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError


def schedule_tick(
    tx: Tx,
    *,
    leader_name: str,
    leader_epoch: int,
    now_ms: int,
    nest_lost_after_ms: int = NEST_LOST_AFTER_MS,
    budget_held: frozenset[str] = frozenset(),
    provider_held: frozenset[str] = frozenset(),
) -> TickSummary:
    """One leader tick, epoch-checked: sweep leases/overdue/holds, lose silent Nests, scale, place."""
    raise NotImplementedError
