"""The fleet-wide part of a leader tick: fire cron/random and event triggers, announce budget thresholds,
end recovered provider holds and prune old events (hourly), all under the leader's epoch. Only the fleet
leader runs it (``agen up``, ``agen hub serve``), never a scoped one-shot's loop."""

from __future__ import annotations

from dataclasses import dataclass, field

from agen.hub.events.log import prune_events
from agen.hub.leadership import HUB_LEADER, check_epoch
from agen.hub.queue import budgets, providers
from agen.hub.triggers.events import fire_event_triggers
from agen.hub.triggers.fire import TickReport
from agen.hub.triggers.tick import fire_due_triggers
from agen.store import Tx

PRUNE_EVERY_MS = 3_600_000


@dataclass
class FleetTickReport:
    triggers: TickReport = field(default_factory=TickReport)
    thresholds: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    pruned: int = 0


def fleet_tick(tx: Tx, *, leader_epoch: int, now_ms: int, prune: bool = False) -> FleetTickReport:
    check_epoch(tx, HUB_LEADER, leader_epoch)
    report = FleetTickReport()
    report.triggers = fire_due_triggers(tx, leader_epoch=leader_epoch, now_ms=now_ms)
    by_events = fire_event_triggers(tx, now_ms=now_ms)
    report.triggers.fired += by_events.fired
    report.triggers.skipped += by_events.skipped
    report.triggers.rejected += by_events.rejected
    report.triggers.merged += by_events.merged
    report.thresholds = budgets.announce_all_thresholds(tx, now_ms)
    report.resumed = providers.end_recovered_holds(tx)
    if prune:
        report.pruned = prune_events(tx, now_ms)
    return report
