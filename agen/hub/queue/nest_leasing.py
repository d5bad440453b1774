"""LeaseTasks and CompleteTask as a Nest calls them: provider holds and budgets on the way.

Leasing for a deployment first asks its provider accounts (agen.hub.queue.providers): held until
``retry_at`` leases nothing, then exactly one probe. A deployment that spent its daily budget
leases nothing (held at 0); at 80 % leased tasks carry ``budget_pressure`` and background
work stays queued, and a task carrying an exhausted label budget stays queued with
``wait_reason: label_budget``. Held-back candidates are passed over inside the lease
transaction, not leased and released, so an idle instance polling every half second does not
write three events per held task per poll; the effect is the same: queued, no attempt counted.
Completing a task that failed with a provider account error records the hold.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from agen.domain import (
    DeploymentBudget,
    DeploymentKind,
    LeasedTaskRow,
    TaskRow,
    TaskState,
    columns,
)
from agen.errors import NotFoundError
from agen.hub.queue import budgets, providers, task_kind
from agen.hub.queue.lease import complete_task, lease_tasks
from agen.hub.queue.submit import PRIORITIES
from agen.store import Tx, loads
from agen.store.pg_locks import lock_keys

BACKGROUND = PRIORITIES["background"]
_BUDGET_SQL = f"SELECT {columns(DeploymentBudget)} FROM deployments WHERE id = ?"
# The same, and whether the leasing instance runs an older definition than the deployment's current one
# (its Nest reported another digest): seed 000 §4, instances on an old digest drain, they take no new work.
# And whether any provider account of it is held (the common answer, no, spares lease_gate's query).
# And whether the leasing Nest is registered: one row even when the deployment is not there (d.id NULL),
# so that check costs no statement of its own.
_LEASE_SQL = (
    "SELECT EXISTS (SELECT 1 FROM nests WHERE id = ?) AS nest_known,"
    f" {columns(DeploymentBudget, 'd')}, EXISTS (SELECT 1 FROM instances i WHERE i.id = ?"
    " AND i.digest != d.digest) AS stale, EXISTS (SELECT 1 FROM provider_holds h JOIN provider_accounts a"
    " ON a.account = h.account WHERE a.deployment_id = d.id AND h.resumed_ms IS NULL) AS holds"
    " FROM (SELECT 1 AS one) o LEFT JOIN deployments d ON d.id = ?"
)


class _LeaseCheck(NamedTuple):
    """What ``_LEASE_SQL`` tells a lease before it takes anything. The deployment's columns are NULL
    when it is not there (the LEFT JOIN): ``kind`` (NOT NULL in the table) is then None, and the
    other deployment fields are not read."""

    nest_known: bool
    stale: bool
    holds: bool
    id: str
    namespace: str
    name: str
    kind: DeploymentKind | None
    budget: str


def unknown_nest(nest_id: str) -> NotFoundError:
    return NotFoundError(
        f"nest {nest_id} is not registered; call RegisterNest first", nest_id=nest_id
    )


def lease_for_nest(
    tx: Tx,
    *,
    deployment_id: str,
    nest_id: str,
    instance_id: str | None,
    limit: int,
    lease_ms: int,
    start: bool = True,
    registered_only: bool = False,
) -> list[LeasedTaskRow]:
    """Lease up to ``limit`` tasks unless a provider hold or a budget says otherwise.

    An instance of a task-kind deployment leases exactly one task, ever (agen.hub.queue.task_kind). An
    instance on an older definition leases nothing: a task submitted after `agen deploy` (or `agen run`
    on a changed folder) runs on the new one, not on an instance the update is about to drain.
    ``registered_only`` (a Nest's LeaseTasks): a Nest that is not registered is refused (NotFoundError),
    checked by the same statement."""
    found = tx.row(_LeaseCheck, _LEASE_SQL, (nest_id, instance_id, deployment_id))
    if registered_only and (found is None or not found.nest_known):
        raise unknown_nest(nest_id)
    if found is None or found.kind is None or limit <= 0 or found.stale:
        return []
    dep = DeploymentBudget(found.id, found.namespace, found.name, found.kind, found.budget)
    if dep.kind != DeploymentKind.TASK:
        return _lease_gated(
            tx,
            dep,
            nest_id=nest_id,
            instance_id=instance_id,
            limit=limit,
            lease_ms=lease_ms,
            start=start,
            holds=found.holds,
        )
    lock_keys(tx, f"instance:{instance_id}")  # "one task per instance, ever": from task_instances
    limit = task_kind.lease_limit(tx, instance_id, limit)
    rows = (
        _lease_gated(
            tx,
            dep,
            nest_id=nest_id,
            instance_id=instance_id,
            limit=limit,
            lease_ms=lease_ms,
            start=start,
            holds=found.holds,
        )
        if limit > 0
        else []
    )
    if rows:
        task_kind.remember(tx, deployment_id, instance_id, rows[0].task.id)
    return rows


def _lease_gated(
    tx: Tx,
    dep: DeploymentBudget,
    *,
    nest_id: str,
    instance_id: str | None,
    limit: int,
    lease_ms: int,
    start: bool,
    holds: bool = True,
) -> list[LeasedTaskRow]:
    now = tx.now_ms
    deployment_id = dep.id
    gate = providers.lease_gate(tx, deployment_id, now) if holds else providers.LeaseGate("open")
    if gate.state == "probe":
        # exactly one probe: decided by one lease at a time per account, from rows read under its key
        lock_keys(tx, f"provider:{gate.account}")
        gate = providers.lease_gate(tx, deployment_id, now)
    if gate.limit is not None:
        limit = min(limit, gate.limit)
        if limit == 0:
            return []
    limit_usd, label_rules = budgets.budget_config(dep)
    if limit_usd is None and not label_rules:  # the common case: no budget, nothing to sum
        rows = lease_tasks(
            tx,
            deployment_id=deployment_id,
            nest_id=nest_id,
            instance_id=instance_id,
            limit=limit,
            lease_ms=lease_ms,
            start=start,
        )
        if gate.state == "probe" and rows:
            providers.mark_probe(tx, deployment_id, rows[0].task.id)
        return rows
    lock_keys(tx, f"budget:{deployment_id}")  # a budget is spent by the runs of every lease of it
    state = budgets.budget_state(tx, dep, now)
    if state.exhausted:
        return []
    exhausted = state.exhausted_labels
    held_back: dict[str, str] = {}

    def skip(row: TaskRow) -> bool:
        if exhausted and budgets.carries_exhausted_label(loads(row.labels, {}), exhausted):
            held_back[row.id] = "label_budget"
        elif state.pressure and row.priority >= BACKGROUND:
            held_back[row.id] = "budget"
        return row.id in held_back

    rows = lease_tasks(
        tx,
        deployment_id=deployment_id,
        nest_id=nest_id,
        instance_id=instance_id,
        limit=limit,
        lease_ms=lease_ms,
        start=start,
        skip=skip if exhausted or state.pressure else None,
    )
    for task_id, reason in held_back.items():
        tx.execute(
            "UPDATE tasks SET wait_reason = ? WHERE id = ? AND state = 'queued'", (reason, task_id)
        )
    if state.pressure:
        rows = [LeasedTaskRow(r.task, r.lease_id, r.locks, budget_pressure=True) for r in rows]
    if gate.state == "probe" and rows:
        providers.mark_probe(tx, deployment_id, rows[0].task.id)
    return rows


def complete_from_nest(
    tx: Tx,
    task_id: str,
    lease_id: str,
    *,
    status: str,
    outcome: dict[str, Any] | None,
    error: str | None = None,
) -> TaskRow:
    """CompleteTask; a failure with a provider account error also holds the account (once: a retried
    report of the same completion changes nothing)."""
    # The fenced update matches only a live lease (leased or running before): then a failure may hold its
    # account. A retried report of a finished task returns it unchanged and holds nothing.
    before = (
        tx.scalar("SELECT state FROM tasks WHERE id = ?", (task_id,))
        if status == TaskState.FAILED
        else None
    )
    row = complete_task(tx, task_id, lease_id, status=status, outcome=outcome, error=error)
    if status == TaskState.FAILED and before in (TaskState.LEASED, TaskState.RUNNING):
        providers.on_task_failed(tx, row.id, row.deployment_id, outcome, error)
    return row


def budget_wait_reason(tx: Tx, task: TaskRow, reason: str | None) -> str | None:
    """Refine queue.wait_reason's "capacity": the budget, a label budget or a provider hold holds it back."""
    if reason != "capacity":
        return reason
    now = tx.now_ms
    dep = tx.row(DeploymentBudget, _BUDGET_SQL, (task.deployment_id,))
    if dep is None:
        return reason
    if providers.lease_gate(tx, dep.id, now).state == "held":
        return "provider_hold"
    limit, labels = budgets.budget_config(dep)
    if limit is None and not labels:
        return reason
    state = budgets.budget_state(tx, dep, now)
    if state.exhausted or (state.pressure and task.priority >= BACKGROUND):
        return "budget"
    if budgets.carries_exhausted_label(loads(task.labels, {}), state.exhausted_labels):
        return "label_budget"
    return reason
