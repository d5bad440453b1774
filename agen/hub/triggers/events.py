"""Event triggers (seed 000 §5 "Event triggers", "Event coalescing"): tasks from the event log.

Each trigger reads its namespace's events after its own cursor (trigger_cursors, created at
the newest event on deploy), in the leader's tick transaction, so the cursor moves with the
firings it caused and a retried tick repeats nothing. A firing's idempotency key is
``event:<trigger>:<seq>``; a trigger ignores the events of its own tasks; a task records how many
event triggers led to it (event_chain) and a firing that would make it longer than 5 is
rejected. ``on.count`` holds matching seqs (pending) until that many arrive within ``on.within``.
``coalesce`` appends a matching event to the trigger's task still queued (created within the
coalesce window) instead of firing another. While an account of the deployment is held the
cursor stays where it is, so no event is lost to a deployment that cannot run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agen.bundle.triggers import EventTrigger
from agen.domain import DeploymentRef, TaskOrigin, TaskRow, columns
from agen.hub.events.deployment_log import write_log
from agen.hub.events.log import EventFilter, EventRow
from agen.hub.queue import providers
from agen.hub.queue.tasks import task_event
from agen.hub.triggers.fire import Fired, TickReport, fire, record_event, task_input
from agen.hub.triggers.tick import (
    TRIGGER_DEPLOYMENT_SQL,
    EventTriggerRow,
    parse_spec,
    trigger_deployment,
)
from agen.store import Tx, dumps, event_log, loads
from agen.util.duration import parse_duration_ms

MAX_EVENT_CHAIN = 5
BATCH = 500  # events examined per trigger per tick; the rest wait for the next tick


@dataclass(frozen=True)
class _Match:
    seq: int
    created_ms: int
    chain: int  # event_chain the fired task gets: the event's task's chain + 1


def fire_event_triggers(tx: Tx, *, now_ms: int | None = None) -> TickReport:
    """Leader tick: advance every event trigger's cursor, firing, coalescing or rejecting on the way."""
    now = tx.now_ms if now_ms is None else now_ms
    tx.now_ms = now
    report = TickReport()
    rows = tx.rows(
        EventTriggerRow,
        f"SELECT t.*, {TRIGGER_DEPLOYMENT_SQL}, c.seq AS cursor_seq, c.pending AS pending"
        " FROM triggers t JOIN deployments d ON d.id = t.deployment_id"
        " JOIN trigger_cursors c ON c.trigger_id = t.id WHERE t.type = 'event' ORDER BY t.id",
    )
    if not rows:
        return report
    held = providers.held_deployment_ids(tx, now)
    tasks: dict[str, TaskOrigin | None] = {}
    for row in rows:
        if row.deployment_id in held:
            continue  # a held provider account keeps the cursor where it is
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
        if isinstance(spec, EventTrigger):
            _advance(tx, row, dep, spec, tasks, report)
    return report


def _task(tx: Tx, cache: dict[str, TaskOrigin | None], task_id: str) -> TaskOrigin | None:
    if task_id not in cache:
        cache[task_id] = tx.row(
            TaskOrigin, f"SELECT {columns(TaskOrigin)} FROM tasks WHERE id = ?", (task_id,)
        )
    return cache[task_id]


def _advance(
    tx: Tx,
    row: EventTriggerRow,
    dep: DeploymentRef,
    spec: EventTrigger,
    cache: dict[str, TaskOrigin | None],
    report: TickReport,
) -> None:
    name = row.name
    source = f"event:{name}"
    flt = EventFilter(types=tuple(spec.on.type), labels=dict(spec.on.labels or {}))
    need = spec.on.count or 1
    within = parse_duration_ms(spec.on.within) if spec.on.within else None
    pending = [
        _Match(int(p[0]), int(p[1]), int(p[2]) if len(p) > 2 else 1) for p in loads(row.pending, [])
    ]
    cursor = row.cursor_seq
    since, params = event_log.after(tx.dialect, cursor)
    events = tx.rows(
        EventRow,
        f"SELECT {event_log.COLUMNS} FROM events WHERE namespace = ? AND {since}"
        f" ORDER BY {event_log.order(tx.dialect)} LIMIT ?",
        (dep.namespace, *params, BATCH),
    )
    for ev in events:
        cursor = ev.seq
        if not flt.matches(ev):
            continue
        chain = 1
        if ev.task_id:
            origin = _task(tx, cache, ev.task_id)
            if origin is not None and origin.deployment_id == dep.id and origin.source == source:
                continue  # its own task's events would make it fire itself forever
            chain = (origin.event_chain if origin is not None else 0) + 1
        pending.append(_Match(cursor, ev.created_ms, chain))
        if within is not None:
            pending = [p for p in pending if ev.created_ms - p.created_ms <= within]
        if len(pending) < need:
            continue
        matched, pending = pending, []
        _settle(tx, dep, spec, matched, report)
    tx.execute(
        "UPDATE trigger_cursors SET seq = ?, pending = ? WHERE trigger_id = ?",
        (cursor, dumps([[p.seq, p.created_ms, p.chain] for p in pending]), row.id),
    )


def _settle(
    tx: Tx, dep: DeploymentRef, spec: EventTrigger, matched: list[_Match], report: TickReport
) -> None:
    """Fire (or coalesce, or reject) for the events that completed the trigger's ``on`` match."""
    last = matched[-1]
    chain = max(m.chain for m in matched)
    if chain > MAX_EVENT_CHAIN:
        record_event(
            tx,
            dep,
            spec.name,
            "rejected",
            reason=(
                f"event_chain: event {last.seq} comes from a task {chain - 1} event triggers deep (limit "
                f"{MAX_EVENT_CHAIN}); stop the loop or change this trigger's `on` filter"
            ),
        )
        report.rejected += 1
        return
    text = _events_text(tx, [m.seq for m in matched])
    if spec.coalesce and _coalesce(
        tx, dep, spec, parse_duration_ms(spec.coalesce), last.seq, chain, text
    ):
        report.merged += 1
        return
    result: Fired = fire(
        tx,
        dep,
        spec.name,
        kind="event",
        key=str(last.seq),
        input=task_input(spec.input, text),
        event_chain=chain,
        reason=f"event {last.seq}",
    )
    if result.status == "fired" and result.task_id:
        report.fired.append(result.task_id)
    elif result.status == "skipped":
        report.skipped += 1


def _events_text(tx: Tx, seqs: list[int]) -> str:
    """The events that caused a firing, one JSON line each, as the task input's tail."""
    rows = tx.rows(
        EventRow,
        f"SELECT {event_log.COLUMNS} FROM events WHERE seq IN ({','.join('?' * len(seqs))})"
        f" ORDER BY {event_log.order(tx.dialect)}",
        seqs,
    )
    lines = []
    for r in rows:
        event: dict[str, Any] = {
            "seq": r.seq,
            "type": r.type,
            "severity": r.severity,
            "deployment": r.deployment,
            "task_id": r.task_id,
            "labels": loads(r.labels, {}),
            "data": loads(r.data, {}),
        }
        lines.append("[event] " + dumps({k: v for k, v in event.items() if v not in (None, {})}))
    return "\n".join(lines)


def _coalesce(
    tx: Tx, dep: DeploymentRef, spec: EventTrigger, window_ms: int, seq: int, chain: int, text: str
) -> bool:
    """Append the event to this trigger's task still queued (created within the window); False if none."""
    task = tx.row(
        TaskRow,
        "SELECT * FROM tasks WHERE deployment_id = ? AND source = ? AND state = 'queued' AND conversation_key IS NULL"
        " AND created_ms >= ? ORDER BY seq DESC LIMIT 1",
        (dep.id, f"event:{spec.name}", tx.now_ms - window_ms),
    )
    if task is None:
        return False
    tx.execute(
        "UPDATE tasks SET input = ?, event_chain = MAX(event_chain, ?), updated_ms = ? WHERE id = ?",
        (f"{task.input}\n{text}" if task.input else text, chain, tx.now_ms, task.id),
    )
    task_event(
        tx,
        task,
        "task.merged",
        {"trigger": spec.name, "event_seq": seq, "idempotency_key": f"event:{spec.name}:{seq}"},
    )
    record_event(
        tx,
        dep,
        spec.name,
        "fired",
        task_id=task.id,
        reason=f"event {seq} coalesced into queued task {task.id}",
    )
    return True
