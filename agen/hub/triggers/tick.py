"""The leader's trigger tick (cron and random) and syncing triggers from a deployment's config.

``fire_due_triggers`` runs in ONE transaction that starts with the leader's epoch check, so a
stale leader's firings are rejected whole; the unique trigger-event index makes a race between
two leaders (or two ticks) fire each window once.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import TypeAdapter

from agen.bundle.config import Config
from agen.bundle.cron import parse_schedule
from agen.bundle.triggers import CronTrigger, RandomTrigger, Trigger
from agen.domain import DeploymentRef, DeploymentRow, columns
from agen.hub.events.deployment_log import write_log
from agen.hub.leadership import HUB_LEADER, check_epoch
from agen.hub.triggers import random as rnd
from agen.hub.triggers.cron import GRACE_MS, plan_windows
from agen.hub.triggers.fire import (
    Fired,
    TickReport,
    fire,
    overlap_refusal,
    record_event,
    task_input,
)
from agen.store import Tx, dumps, event_log, loads, new_ulid
from agen.util.duration import parse_duration_ms

_TRIGGER_TYPE: Any = Trigger  # an Annotated union: TypeAdapter takes it, its stub wants a type
_TRIGGER: TypeAdapter[Any] = TypeAdapter(_TRIGGER_TYPE)


TRIGGER_DEPLOYMENT_SQL = "d.namespace, d.name AS deployment_name, d.definition_id"
"""The deployment's columns a trigger row is joined with (``triggers t JOIN deployments d``)."""


class TriggerRow(NamedTuple):
    """A row of ``triggers`` joined with its deployment's columns (TRIGGER_DEPLOYMENT_SQL): what the
    cron and random tick reads."""

    id: str
    deployment_id: str
    name: str
    type: str
    spec: str  # camelCase JSON
    active_since_ms: int
    next_due_ms: int | None
    last_due_ms: int | None
    namespace: str
    deployment_name: str
    definition_id: str


class EventTriggerRow(NamedTuple):
    """An event trigger joined with its deployment's columns and its cursor (trigger_cursors)."""

    id: str
    deployment_id: str
    name: str
    spec: str  # camelCase JSON
    namespace: str
    deployment_name: str
    definition_id: str
    cursor_seq: int
    pending: str  # JSON text: [[seq, created_ms, chain], ...]


class _StoredTrigger(NamedTuple):
    """A trigger as sync_triggers compares it with the deployment's config."""

    id: str
    name: str
    type: str
    spec: str


def parse_spec(spec: str) -> Any:
    """A stored trigger spec (camelCase JSON text: ``triggers.spec``) as its bundle model."""
    return _TRIGGER.validate_python(loads(spec), by_alias=True)


def next_due_ms(spec: Any, dep: DeploymentRef | DeploymentRow, after_ms: int) -> int | None:
    if isinstance(spec, CronTrigger):
        return parse_schedule(spec.schedule).next_after_ms(after_ms)
    if isinstance(spec, RandomTrigger):
        return rnd.next_planned_ms(
            spec, namespace=dep.namespace, deployment=dep.name, after_ms=after_ms
        )
    return None


def sync_triggers(tx: Tx, dep: DeploymentRef | DeploymentRow, config: Config) -> None:
    """Upsert the triggers table from a deployment's config (on deploy and update).

    A new or changed trigger becomes active now (no back-fill); removed ones are deleted.
    Event triggers get their cursor at the newest event.
    """
    now = tx.now_ms
    existing = {
        r.name: r
        for r in tx.rows(
            _StoredTrigger,
            f"SELECT {columns(_StoredTrigger)} FROM triggers WHERE deployment_id = ?",
            (dep.id,),
        )
    }
    newest_seq = int(tx.scalar(event_log.head_sql(tx.dialect)) or 0)
    for trig in config.triggers:
        spec_json = dumps(trig.model_dump(mode="json", by_alias=True, exclude_none=True))
        old = existing.pop(trig.name, None)
        if old is not None and old.spec == spec_json and old.type == trig.type:
            continue
        nxt = next_due_ms(trig, dep, now)
        if old is None:
            trig_id = new_ulid()
            tx.execute(
                "INSERT INTO triggers (id, deployment_id, name, type, spec, active_since_ms, next_due_ms)"
                " VALUES (?,?,?,?,?,?,?)",
                (trig_id, dep.id, trig.name, trig.type, spec_json, now, nxt),
            )
        else:
            trig_id = old.id
            tx.execute(
                "UPDATE triggers SET type = ?, spec = ?, active_since_ms = ?, next_due_ms = ?, last_due_ms = NULL"
                " WHERE id = ?",
                (trig.type, spec_json, now, nxt, trig_id),
            )
        if trig.type == "event":
            tx.execute(
                "INSERT INTO trigger_cursors (trigger_id, seq) VALUES (?, ?) ON CONFLICT (trigger_id) DO NOTHING",
                (trig_id, newest_seq),
            )
    for gone in existing.values():
        tx.execute("DELETE FROM triggers WHERE id = ?", (gone.id,))


def trigger_deployment(row: TriggerRow | EventTriggerRow) -> DeploymentRef:
    """The deployment of a trigger row joined with TRIGGER_DEPLOYMENT_SQL (the trigger's own id and
    name take the plain column names, so the deployment's come aliased)."""
    return DeploymentRef(row.deployment_id, row.namespace, row.deployment_name, row.definition_id)


def fire_due_triggers(tx: Tx, *, leader_epoch: int, now_ms: int | None = None) -> TickReport:
    """Leader tick: settle every due cron and random window (fire, miss, skip, catch up)."""
    check_epoch(tx, HUB_LEADER, leader_epoch)
    now = tx.now_ms if now_ms is None else now_ms
    tx.now_ms = now  # the injected clock stamps events, tasks and spacing checks alike
    report = TickReport()
    rows = tx.rows(
        TriggerRow,
        f"SELECT t.*, {TRIGGER_DEPLOYMENT_SQL} FROM triggers t"
        " JOIN deployments d ON d.id = t.deployment_id WHERE t.type IN ('cron', 'random')"
        " AND (t.next_due_ms IS NULL OR t.next_due_ms <= ?) ORDER BY t.next_due_ms",
        (now,),
    )
    for row in rows:
        dep = trigger_deployment(row)
        try:
            spec = parse_spec(row.spec)
        except ValueError as e:
            write_log(
                tx,
                dep.namespace,
                dep.name,
                f"trigger {row.name}: bad stored spec: {e}",
                level="error",
            )
            continue
        if isinstance(spec, CronTrigger):
            _cron(tx, row, dep, spec, now, report)
        elif isinstance(spec, RandomTrigger):
            _random(tx, row, dep, spec, now, report)
    return report


def _count(report: TickReport, result: Fired) -> None:
    if result.status == "fired" and result.task_id:
        report.fired.append(result.task_id)
    elif result.status == "skipped":
        report.skipped += 1


def _cron(
    tx: Tx, row: TriggerRow, dep: DeploymentRef, spec: CronTrigger, now: int, report: TickReport
) -> None:
    schedule = parse_schedule(spec.schedule)
    jitter = parse_duration_ms(spec.jitter) if spec.jitter else 0
    plan = plan_windows(
        schedule,
        namespace=dep.namespace,
        deployment=dep.name,
        trigger=row.name,
        cursor_ms=row.last_due_ms,
        active_since_ms=row.active_since_ms,
        now_ms=now,
        jitter_ms=jitter,
    )
    window_ms = parse_duration_ms(spec.catch_up_window) if spec.catch_up_window else None
    catch = plan.catch_up(now, window_ms) if spec.catch_up else None
    spacing = parse_duration_ms(spec.min_start_spacing) if spec.min_start_spacing else 0
    locks = [f"trigger:{dep.name}:{row.name}"] if spec.overlap == "buffer_one" else []
    missed = [w for w in plan.late if w is not catch]
    for w in missed:
        if record_event(
            tx,
            dep,
            row.name,
            "missed",
            due_ms=w.due_ms,
            reason="the Hub did not evaluate it in time",
        ):
            report.missed += 1
    if missed or plan.uncounted_late:
        older = (
            ""
            if plan.uncounted_late == 0
            else (
                f" and {plan.uncounted_late} older windows"
                if plan.uncounted_late > 0
                else " and windows older than 7 days"
            )
        )
        tx.event(
            dep.namespace,
            "trigger.missed",
            severity="warning",
            deployment=dep.name,
            data={
                "trigger": row.name,
                "windows": [w.due_ms for w in missed],
                "older": plan.uncounted_late,
            },
            dedupe_key=f"trigger.missed:{dep.id}:{row.name}:{missed[-1].due_ms if missed else now}",
        )
        write_log(
            tx,
            dep.namespace,
            dep.name,
            f"trigger {row.name}: {len(missed)} missed windows{older}",
            level="warning",
        )
    windows = ([catch] if catch else []) + plan.on_time
    for w in windows:
        why = overlap_refusal(tx, dep, row.name, "cron", spec.overlap, spacing)
        if why is not None:
            if record_event(tx, dep, row.name, "skipped", due_ms=w.due_ms, reason=why):
                report.skipped += 1
            continue
        result = fire(
            tx,
            dep,
            row.name,
            kind="cron",
            key=str(w.due_ms),
            due_ms=w.due_ms,
            input=task_input(spec.input),
            labels=spec.labels,
            conversation_key=spec.conversation_key,
            locks=locks,
            reason="catch_up" if w is catch else None,
        )
        _count(report, result)
    tx.execute(
        "UPDATE triggers SET last_due_ms = ?, next_due_ms = ? WHERE id = ?",
        (plan.cursor_ms, plan.next_due_ms, row.id),
    )


def _random(
    tx: Tx, row: TriggerRow, dep: DeploymentRef, spec: RandomTrigger, now: int, report: TickReport
) -> None:
    cursor = row.last_due_ms if row.last_due_ms is not None else row.active_since_ms - 1
    last = cursor
    for t in rnd.candidate_times_ms(spec, namespace=dep.namespace, deployment=dep.name, now_ms=now):
        if t <= cursor or t < row.active_since_ms or t > now:
            continue
        last = t
        if now - t > GRACE_MS:
            if record_event(
                tx,
                dep,
                row.name,
                "missed",
                due_ms=t,
                reason="the Hub did not evaluate it in time",
            ):
                report.missed += 1
            continue
        _count(
            report,
            fire(
                tx,
                dep,
                row.name,
                kind="random",
                key=str(t),
                due_ms=t,
                input=task_input(spec.input),
            ),
        )
    nxt = rnd.next_planned_ms(
        spec, namespace=dep.namespace, deployment=dep.name, after_ms=max(last, now)
    )
    tx.execute(
        "UPDATE triggers SET last_due_ms = ?, next_due_ms = ? WHERE id = ?",
        (last if last != cursor else row.last_due_ms, nxt, row.id),
    )
