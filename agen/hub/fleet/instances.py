"""Nests and their instances as the Hub sees them: enrolment, status reports, assignments."""

from __future__ import annotations

from typing import Any, NamedTuple

from agen.domain import columns
from agen.hub.events.deployment_log import write_log
from agen.hub.queue.lease import release_task
from agen.hub.queue.tasks import fence_run
from agen.store import Tx, dumps, loads, new_ulid
from agen.store.records import Count
from agen.wire.nests import START_FAILED, Assignment, InstanceReport

FAILING_AFTER = 3  # consecutive start failures that mark a deployment's instances failing


class _Held(NamedTuple):
    """A task a Nest holds the lease of."""

    id: str
    lease_id: str


class _Live(NamedTuple):
    """A deployment assigned to a Nest, and its live instances on every Nest."""

    deployment_id: str
    live: Count


class _Known(NamedTuple):
    """An instance as the Nest reported it last."""

    id: str
    state: str


class _Name(NamedTuple):
    id: str
    namespace: str
    name: str


class _Started(NamedTuple):
    """How one of a deployment's latest instances ended (instance_failing)."""

    state: str
    exit_reason: str | None


class _Assigned(NamedTuple):
    """One assignment of a Nest, with what it needs of the deployment."""

    deployment_id: str
    instances: int  # assignments.count (a tuple has a count method)
    namespace: str
    name: str
    kind: str
    definition_id: str
    digest: str
    scale: str  # JSON text
    paused: bool


def register_nest(
    tx: Tx,
    name: str,
    *,
    capacity: int,
    labels: dict[str, str] | None = None,
    gateway_url: str | None = None,
) -> str:
    """Enrol (or re-enrol) a Nest by name; a restarted Nest forgets the instances it had, and says
    again where its Gateway is (None: it runs none now)."""
    found = tx.scalar("SELECT id FROM nests WHERE name = ?", (name,))
    if found is None:
        nest_id = new_ulid()
        tx.execute(
            "INSERT INTO nests (id, name, labels, capacity, state, gateway_url, last_heartbeat_ms,"
            " created_ms) VALUES (?,?,?,?, 'active', ?, ?, ?)",
            (nest_id, name, dumps(labels or {}), capacity, gateway_url, tx.now_ms, tx.now_ms),
        )
        return nest_id
    nest_id = str(found)
    tx.execute(
        "UPDATE nests SET labels = ?, capacity = ?, state = 'active', gateway_url = ?,"
        " last_heartbeat_ms = ? WHERE id = ?",
        (dumps(labels or {}), capacity, gateway_url, tx.now_ms, nest_id),
    )
    # the restarted Nest runs nothing: its old leases are void, not worth waiting out
    void_nest_work(tx, nest_id, name, "restarted", count_attempt=True)
    return nest_id


def void_nest_work(tx: Tx, nest_id: str, name: str, why: str, *, count_attempt: bool) -> None:
    """A Nest that runs nothing any more (restarted, revoked): its instances stop and the tasks it
    leased go back to the queue now, with ``nest <name> <why>`` as the reason."""
    tx.execute(
        "UPDATE instances SET state = 'stopped', exit_reason = ?, updated_ms = ?"
        " WHERE nest_id = ? AND state NOT IN ('stopped', 'failed')",
        (f"nest {why}", tx.now_ms, nest_id),
    )
    held = tx.rows(
        _Held,
        f"SELECT {columns(_Held)} FROM tasks WHERE lease_nest_id = ?"
        " AND state IN ('leased', 'running')",
        (nest_id,),
    )
    for t in held:
        release_task(tx, t.id, t.lease_id, count_attempt=count_attempt, reason=f"nest {name} {why}")
        fence_run(tx, t.id)  # a revoked Nest may still be running it


def retire_nest(tx: Tx, nest_id: str) -> None:
    """A one-shot's Nest that drained and exits: no longer active (so it is never reported lost) and
    assigned nothing. Its row and its instances stay, as the history ``agen logs`` and the
    instance-failing check read. A lease it still holds expires as any other."""
    tx.execute("UPDATE nests SET state = 'lost' WHERE id = ?", (nest_id,))
    tx.execute("DELETE FROM assignments WHERE nest_id = ?", (nest_id,))


def record_saturation(tx: Tx, nest_id: str, deployment_ids: list[str]) -> None:
    """A Nest's Gateway has callers waiting on full instances of these deployments (seed 000 §5):
    ask for one more than their live instances (every Nest's, as this heartbeat left them), and
    count it as activity. Only deployments assigned to this Nest count: one whose assignment was
    just removed is a report that crossed the change, not a request for it to come back."""
    ids = sorted(set(deployment_ids))
    if not ids:
        return
    marks = ",".join("?" * len(ids))
    rows = tx.rows(
        _Live,
        "SELECT a.deployment_id, (SELECT COUNT(*) FROM instances i WHERE i.deployment_id ="
        " a.deployment_id AND i.state IN ('starting', 'ready', 'busy')) AS live"
        f" FROM assignments a WHERE a.nest_id = ? AND a.count > 0 AND a.deployment_id IN ({marks})",
        (nest_id, *ids),
    )
    tx.executemany(
        "UPDATE deployments SET saturated_ms = ?, saturated_want = ?, last_activity_ms = ?"
        " WHERE id = ?",
        [(tx.now_ms, r.live + 1, tx.now_ms, r.deployment_id) for r in rows],
    )


def report_status(tx: Tx, nest_id: str, reports: list[InstanceReport]) -> list[Assignment]:
    """Heartbeat: record this Nest's instances (logging state changes), return its assignments."""
    tx.execute(
        "UPDATE nests SET last_heartbeat_ms = ?, state = 'active' WHERE id = ?",
        (tx.now_ms, nest_id),
    )
    known = {
        r.id: r.state
        for r in tx.rows(
            _Known, f"SELECT {columns(_Known)} FROM instances WHERE nest_id = ?", (nest_id,)
        )
    }
    names = {
        r.id: (r.namespace, r.name)
        for r in tx.rows(_Name, f"SELECT {columns(_Name)} FROM deployments")
    }
    for rep in reports:
        before = known.get(rep.id)
        if before is None:
            tx.execute(
                "INSERT INTO instances (id, nest_id, deployment_id, digest, state, in_flight, exit_reason,"
                " started_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    rep.id,
                    nest_id,
                    rep.deployment_id,
                    rep.digest,
                    rep.state,
                    rep.in_flight,
                    rep.exit_reason,
                    tx.now_ms,
                    tx.now_ms,
                ),
            )
        else:
            tx.execute(
                "UPDATE instances SET state = ?, in_flight = ?, exit_reason = ?, updated_ms = ? WHERE id = ?",
                (rep.state, rep.in_flight, rep.exit_reason, tx.now_ms, rep.id),
            )
        if (before is None or before != rep.state) and rep.deployment_id in names:
            ns, dep = names[rep.deployment_id]
            message = _transition(rep, before)
            if message and before is None and _repeats_last_error(tx, ns, dep, message):
                continue  # a crash loop on one error: the log says it once, not once per attempt
            if message:
                level = "error" if rep.state == "failed" else "info"
                write_log(tx, ns, dep, message, level=level, instance_id=rep.id)
        if rep.state in ("ready", "busy") and rep.in_flight and rep.deployment_id in names:
            tx.execute(
                "UPDATE deployments SET last_activity_ms = ? WHERE id = ?",
                (tx.now_ms, rep.deployment_id),
            )
    return assignments_for(tx, nest_id)


def _repeats_last_error(tx: Tx, namespace: str, deployment: str, message: str) -> bool:
    last = tx.scalar(
        "SELECT message FROM deployment_logs WHERE namespace = ? AND deployment = ? AND level = 'error'"
        " ORDER BY seq DESC LIMIT 1",
        (namespace, deployment),
    )
    return bool(last == message)


def instance_failing(tx: Tx, deployment_id: str) -> str | None:
    """The last start error when the deployment's latest FAILING_AFTER instances (on its current digest)
    all failed to start: its queued tasks wait on a bundle problem, not on capacity."""
    rows = tx.rows(
        _Started,
        f"SELECT {columns(_Started, 'i')} FROM instances i JOIN deployments d ON d.id = i.deployment_id"
        " WHERE i.deployment_id = ? AND i.digest = d.digest ORDER BY i.started_ms DESC, i.id DESC LIMIT ?",
        (deployment_id, FAILING_AFTER),
    )
    if len(rows) < FAILING_AFTER or not all(
        r.state == "failed" and (r.exit_reason or "").startswith(START_FAILED) for r in rows
    ):
        return None
    return str(rows[0].exit_reason)[len(START_FAILED) :]


def _transition(rep: InstanceReport, before: str | None) -> str | None:
    if rep.state == "starting" and before is None:
        return f"instance {rep.id} starting ({rep.digest[:19]})"
    if rep.state == "ready" and before in (None, "starting"):
        return f"instance {rep.id} ready"
    if rep.state == "draining":
        return f"instance {rep.id} draining"
    if rep.state == "stopped":
        return f"instance {rep.id} stopped" + (f": {rep.exit_reason}" if rep.exit_reason else "")
    if (
        rep.state == "failed"
        and before is None
        and (rep.exit_reason or "").startswith(START_FAILED)
    ):
        return f"instance failed to start: {(rep.exit_reason or '')[len(START_FAILED) :]}"
    if rep.state == "failed":
        return f"instance {rep.id} failed: {rep.exit_reason or 'unknown'}"
    return None


def assignments_for(tx: Tx, nest_id: str) -> list[Assignment]:
    rows = tx.rows(
        _Assigned,
        "SELECT a.deployment_id, a.count AS instances, d.namespace, d.name, d.kind, d.definition_id, d.digest, d.scale, d.paused"
        " FROM assignments a JOIN deployments d ON d.id = a.deployment_id WHERE a.nest_id = ?",
        (nest_id,),
    )
    out = []
    for r in rows:
        scale: dict[str, Any] = loads(r.scale, {})
        out.append(
            Assignment.model_construct(
                deployment_id=r.deployment_id,
                namespace=r.namespace,
                deployment=r.name,
                definition_id=r.definition_id,
                digest=r.digest,
                count=int(r.instances),
                max_concurrency=int(scale.get("max_concurrency", 4)),
                paused=r.paused,
                kind=r.kind,
            )
        )
    return out
