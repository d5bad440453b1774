"""Deployment RPCs: store a bundle as a definition and keep the deployment's desired state."""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import TYPE_CHECKING, Any, NamedTuple

from agen.domain import DeploymentBudget, DeploymentRef, DeploymentRow, columns
from agen.errors import ConflictError, InvalidError, NotFoundError
from agen.hub import queue
from agen.hub.auth import Principal
from agen.hub.definitions import put_definition
from agen.hub.events.deployment_log import write_log
from agen.hub.observe.activity import DeploymentFacts, deployment_activity, deployment_facts
from agen.hub.service import Hub
from agen.store import Tx, dumps, loads, new_ulid
from agen.store.records import Count
from agen.wire.deployments import (
    CreateDeploymentRequest,
    DeleteDeploymentRequest,
    DeleteDeploymentResponse,
    Deployment,
    DeploymentResponse,
    GetDeploymentRequest,
    GetLogsRequest,
    GetLogsResponse,
    Instance,
    ListDeploymentsRequest,
    ListDeploymentsResponse,
    ListInstancesRequest,
    ListInstancesResponse,
    LogLine,
    PauseDeploymentRequest,
    ScaleDeploymentRequest,
    ScalePolicy,
    TriggerDue,
)
from agen.wire.limits import BundleLimits

if TYPE_CHECKING:
    from agen.bundle import Bundle

UNFINISHED = "('queued', 'leased', 'running', 'waiting')"


def decode_files(files: dict[str, str], limits: BundleLimits | None = None) -> dict[str, bytes]:
    """The bundle's bytes, refused (413, naming the file) past the bundle size limits."""
    out: dict[str, bytes] = {}
    for path, b64 in files.items():
        try:
            out[path] = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidError(
                f"files[{path!r}] is not valid base64", field=f"files.{path}"
            ) from None
    (limits or BundleLimits.from_env()).check(out)
    return out


def encode_files(files: dict[str, bytes], limits: BundleLimits | None = None) -> dict[str, str]:
    """The wire form of a bundle; an oversize one is refused here, before it is uploaded."""
    (limits or BundleLimits.from_env()).check(files)
    return {path: base64.b64encode(data).decode() for path, data in files.items()}


def _scale(bundle: Bundle) -> ScalePolicy:
    s = bundle.config.scale
    return ScalePolicy(
        min=s.min,
        max=s.max,
        target_queue_per_instance=s.target_queue_per_instance,
        idle_timeout_ms=bundle.config.idle_timeout_ms,
        max_concurrency=s.max_concurrency,
        reserve=s.reserve,
    )


def _policy(bundle: Bundle) -> dict[str, Any]:
    c = bundle.config
    return {
        "admission": c.admission.model_dump(exclude_none=True),
        "conversations": c.conversations.model_dump(),
    }


def _sync_signals(tx: Tx, dep: DeploymentRef, bundle: Bundle) -> None:
    """Triggers, provider accounts and the approval notify target follow the deployed definition."""
    from agen.hub.events.notify import sync_bundle_target  # with its URL checks: only on deploy
    from agen.hub.queue.providers import harness_key_secrets, sync_accounts

    namespace, name = dep.namespace, dep.name
    if bundle.config.triggers or tx.scalar(
        "SELECT 1 FROM triggers WHERE deployment_id = ? LIMIT 1", (dep.id,)
    ):  # the trigger machinery (cron parsing, event filters) loads only for a bundle that has some
        from agen.hub.triggers.tick import sync_triggers

        sync_triggers(tx, dep, bundle.config)
    sync_bundle_target(tx, namespace, name, bundle.config.permissions.notify)
    keys = harness_key_secrets(
        namespace, bundle.harness.model_dump(by_alias=True, exclude_none=True)
    )
    envs = {
        acct: None if _platform(bundle, key) else bundle.secrets.env_var(key)
        for acct, key in keys.items()
    }
    sync_accounts(tx, dep.id, list(keys), envs)


def _platform(bundle: Bundle, secret: str) -> bool:
    spec = bundle.secrets.secrets.get(secret)
    return spec is not None and spec.source == "platform"


async def _delegate_warnings(hub: Hub, namespace: str, bundle: Bundle) -> list[str]:
    """A delegate that is not deployed (yet) is a warning: call_agent on it fails clearly at run time."""
    out = []
    for i, d in enumerate(bundle.config.delegates):
        ns = d.namespace or namespace
        if d.url is not None or (d.name == bundle.name and ns == namespace):
            continue  # an A2A agent at a url is not a deployment of this Hub
        if (
            await hub.store.scalar(
                "SELECT 1 FROM deployments WHERE namespace = ? AND name = ?", (ns, d.name)
            )
            is None
        ):
            out.append(
                f"x-agen/config.json: delegates[{i}]: agent {ns}/{d.name} is not deployed; deploy "
                "it before this agent delegates to it (call_agent would fail until then)"
            )
    return out


async def create_deployment(
    hub: Hub, p: Principal, req: CreateDeploymentRequest
) -> DeploymentResponse:
    return await _apply(hub, p, req, must_exist=False)


async def update_deployment(
    hub: Hub, p: Principal, req: CreateDeploymentRequest
) -> DeploymentResponse:
    return await _apply(hub, p, req, must_exist=True)


async def _apply(
    hub: Hub, p: Principal, req: CreateDeploymentRequest, *, must_exist: bool
) -> DeploymentResponse:
    from agen.bundle import (
        load_bundle_files,
    )  # the loader (every x-agen/ model, YAML) loads with a bundle

    p.require_namespace(req.namespace)
    bundle = load_bundle_files(decode_files(req.files))
    warnings = [
        *bundle.warnings,
        *_secret_warnings(bundle),
        *await _delegate_warnings(hub, req.namespace, bundle),
    ]
    if req.validate_only:
        return DeploymentResponse(warnings=warnings)
    name = req.name or bundle.name
    scale = _scale(bundle)
    if req.replicas is not None and req.replicas > scale.max:
        raise InvalidError(
            f"--replicas {req.replicas} is above scale.max {scale.max} of {name}; raise scale.max in x-agen/config.json",
            field="replicas",
        )

    def fn(tx: Tx) -> tuple[str, bool, bool]:
        dep_id, created, changed = _put_deployment(tx)
        if req.replicas:  # a scale-up, checked against the budget this very bundle sets
            from agen.hub.queue.budgets import require_budget_left

            stored = tx.row(
                DeploymentBudget,
                f"SELECT {columns(DeploymentBudget)} FROM deployments WHERE id = ?",
                (dep_id,),
            )
            assert stored is not None
            require_budget_left(tx, stored, tx.now_ms, f"--replicas {req.replicas}")
        return dep_id, created, changed

    def _put_deployment(tx: Tx) -> tuple[str, bool, bool]:
        def_id = put_definition(tx, bundle.name, bundle.digest, bundle.files)
        row = tx.row(
            _Stored,
            f"SELECT {columns(_Stored)} FROM deployments WHERE namespace = ? AND name = ?",
            (req.namespace, name),
        )
        if row is None and must_exist:
            raise NotFoundError(
                f"deployment {req.namespace}/{name} does not exist; create it with `agen deploy`"
            )
        fields = {
            "kind": bundle.config.kind,
            "definition_id": def_id,
            "digest": bundle.digest,
            "scale": scale.model_dump_json(),
            "placement": bundle.config.placement.model_dump_json(),  # {"labels": {...}}
            "budget": bundle.config.budget.model_dump_json(exclude_none=True),
            "limits": bundle.config.limits.model_dump_json(exclude_none=True),
            "policy": dumps(_policy(bundle)),
        }
        if row is None:
            dep_id = new_ulid()
            desired = req.replicas if req.replicas is not None else scale.min
            tx.execute(
                "INSERT INTO deployments (id, namespace, name, kind, definition_id, digest, scale, placement, budget,"
                " limits, policy, desired, last_activity_ms, manual_scale_ms, created_ms, updated_ms)"
                " VALUES (:id,:ns,:name,:kind,:definition_id,:digest,:scale,:placement,:budget,:limits,:policy,"
                " :desired,:now,:manual,:now,:now)",
                {
                    **fields,
                    "id": dep_id,
                    "ns": req.namespace,
                    "name": name,
                    "desired": desired,
                    "now": tx.now_ms,
                    "manual": tx.now_ms if req.replicas is not None else None,
                },
            )
            tx.event(
                req.namespace, "deployment.created", deployment=name, data={"definition": def_id}
            )
            write_log(tx, req.namespace, name, f"created from {def_id}")
            _sync_signals(tx, DeploymentRef(dep_id, req.namespace, name, def_id), bundle)
            return dep_id, True, True
        changed = row.definition_id != def_id
        desired = row.desired
        if req.replicas is not None:
            desired = req.replicas
        elif not row.paused:
            desired = min(max(desired, scale.min), scale.max)
        tx.execute(
            "UPDATE deployments SET kind=:kind, definition_id=:definition_id, digest=:digest, scale=:scale,"
            " placement=:placement, budget=:budget, limits=:limits, policy=:policy, desired=:desired,"
            " manual_scale_ms=COALESCE(:manual, manual_scale_ms), last_activity_ms=:now, updated_ms=:now"
            " WHERE id=:id",
            {
                **fields,
                "desired": desired,
                "now": tx.now_ms,
                "id": row.id,
                "manual": tx.now_ms if req.replicas is not None else None,
            },
        )
        if changed:
            tx.event(
                req.namespace, "deployment.updated", deployment=name, data={"definition": def_id}
            )
            write_log(tx, req.namespace, name, f"updated to {def_id}")
        _sync_signals(tx, DeploymentRef(row.id, req.namespace, name, def_id), bundle)
        return row.id, False, changed

    dep_id, created, changed = await hub.store.write(fn)
    hub.desired_state_changed()
    view = await _view_by_id(hub, dep_id)
    return DeploymentResponse(deployment=view, created=created, changed=changed, warnings=warnings)


def _secret_warnings(bundle: Bundle) -> list[str]:
    """The bundle's env secrets this Hub's process lacks: its local Nest's instances read them here."""
    import os

    from agen.bundle.secret_check import unset_secrets

    return unset_secrets(bundle.secrets, os.environ, where="the Hub's environment")


async def find_deployment(hub: Hub, p: Principal, namespace: str, name: str) -> DeploymentRow:
    p.require_namespace(namespace)
    row = await hub.store.row(
        DeploymentRow,
        "SELECT * FROM deployments WHERE namespace = ? AND name = ?",
        (namespace, name),
    )
    if row is None:
        raise NotFoundError(
            f"deployment {namespace}/{name} not found; `agen ps` lists deployments, `agen deploy <dir>` creates one",
            deployment=name,
            namespace=namespace,
        )
    return row


_COUNTS = (
    "SELECT deployment_id,"
    " SUM(CASE WHEN state='queued' AND (not_before_ms IS NULL OR not_before_ms <= :now) THEN 1 ELSE 0 END) AS queued,"
    " SUM(CASE WHEN state='queued' AND not_before_ms > :now THEN 1 ELSE 0 END) AS scheduled,"
    " SUM(CASE WHEN state IN ('leased','running') THEN 1 ELSE 0 END) AS running,"
    " SUM(CASE WHEN state='waiting' THEN 1 ELSE 0 END) AS waiting,"
    " SUM(CASE WHEN state='waiting' AND (wait_for = 'children' OR wait_for LIKE 'child:%')"
    " THEN 1 ELSE 0 END) AS delegating"
    " FROM tasks WHERE state IN ('queued','leased','running','waiting') {where} GROUP BY deployment_id"
)
_INSTANCES = (
    "SELECT deployment_id, SUM(CASE WHEN state IN ('ready','busy') THEN 1 ELSE 0 END) AS ready,"
    " COUNT(*) AS total FROM instances WHERE state NOT IN ('stopped','failed') {where} GROUP BY deployment_id"
)


class _Counts(NamedTuple):
    """A deployment's unfinished tasks by what they wait for (``_COUNTS``)."""

    deployment_id: str
    queued: Count = 0
    scheduled: Count = 0
    running: Count = 0
    waiting: Count = 0
    delegating: Count = 0


class _Instances(NamedTuple):
    """A deployment's live instances (``_INSTANCES``)."""

    deployment_id: str
    ready: Count = 0
    total: Count = 0


class _Trigger(NamedTuple):
    """When a deployment's timed trigger is due next (and was last)."""

    deployment_id: str
    name: str
    type: str
    next_due_ms: int | None
    last_due_ms: int | None


class _Stored(NamedTuple):
    """What a redeploy keeps of the deployment as it was."""

    id: str
    definition_id: str
    desired: int
    paused: bool


class _TaskId(NamedTuple):
    id: str


def _to_view(
    row: DeploymentRow,
    counts: _Counts | None,
    inst: _Instances | None,
    facts: DeploymentFacts | None = None,
    triggers: list[TriggerDue] | None = None,
) -> Deployment:
    counts = counts or _Counts(row.id)
    inst = inst or _Instances(row.id)
    running, queued, ready = counts.running, counts.queued, inst.ready
    act = (
        deployment_activity(
            row,
            facts,
            running=running,
            queued=queued,
            ready=ready,
            delegating=counts.delegating,
        )
        if facts
        else None
    )
    key = (row.namespace, row.name)
    failures = facts.failures.get(row.id) if facts else None
    return Deployment(
        id=row.id,
        namespace=row.namespace,
        name=row.name,
        kind=row.kind.value,
        definition_id=row.definition_id,
        digest=row.digest,
        scale=ScalePolicy.model_validate_json(row.scale),
        placement=loads(row.placement, {}),
        budget=loads(row.budget, {}),
        limits=loads(row.limits, {}),
        policy=loads(row.policy, {}),
        desired=row.desired,
        paused=row.paused,
        pause_reason=row.pause_reason,
        ready=inst.ready,
        instances=inst.total,
        queued=counts.queued,
        scheduled=counts.scheduled,
        running=counts.running,
        waiting=counts.waiting,
        last_activity_ms=row.last_activity_ms,
        created_ms=row.created_ms,
        updated_ms=row.updated_ms,
        activity=act.word if act else "idle",
        stopped_reason=act.stopped_reason if act else None,
        waiting_on=act.waiting_on if act else None,
        failing_reason=facts.failing.get(row.id)
        if facts and act and act.word == "failing"
        else None,
        needs=act.needs if act else None,
        failed_1h=failures.count if failures else 0,
        last_failure=failures.last_error if failures else None,
        last_failure_ms=failures.last_ms if failures else None,
        pending_approvals=facts.pending_approvals.get(key, 0) if facts else 0,
        spent_today_usd=round(facts.spent_today.get(key, 0.0), 6) if facts else 0.0,
        triggers=triggers or [],
    )


async def _views(hub: Hub, rows: list[DeploymentRow]) -> list[Deployment]:
    if not rows:
        return []
    ids = [r.id for r in rows]
    marks = ",".join("?" * len(ids))
    now = hub.clock()
    counts = await hub.store.rows(
        _Counts,
        _COUNTS.replace(":now", str(int(now))).format(where=f"AND deployment_id IN ({marks})"),
        ids,
    )
    inst = await hub.store.rows(
        _Instances, _INSTANCES.format(where=f"AND deployment_id IN ({marks})"), ids
    )
    by_c = {c.deployment_id: c for c in counts}
    by_i = {i.deployment_id: i for i in inst}
    facts = await deployment_facts(hub.store, rows, int(now))
    by_t: dict[str, list[TriggerDue]] = {}
    for t in await hub.store.rows(
        _Trigger,
        f"SELECT {columns(_Trigger)} FROM triggers WHERE type IN ('cron', 'random')"
        f" AND deployment_id IN ({marks}) ORDER BY name",
        ids,
    ):
        by_t.setdefault(t.deployment_id, []).append(
            TriggerDue(
                name=t.name,
                type=t.type,
                next_due_at=t.next_due_ms,
                last_due_at=t.last_due_ms,
            )
        )
    return [_to_view(r, by_c.get(r.id), by_i.get(r.id), facts, by_t.get(r.id)) for r in rows]


async def _view_by_id(hub: Hub, dep_id: str) -> Deployment:
    row = await hub.store.row(DeploymentRow, "SELECT * FROM deployments WHERE id = ?", (dep_id,))
    if row is None:
        raise NotFoundError(f"deployment {dep_id} not found")
    return (await _views(hub, [row]))[0]


async def get_deployment(hub: Hub, p: Principal, req: GetDeploymentRequest) -> DeploymentResponse:
    row = await find_deployment(hub, p, req.namespace, req.name)
    return DeploymentResponse(deployment=(await _views(hub, [row]))[0])


async def list_deployments(
    hub: Hub, p: Principal, req: ListDeploymentsRequest
) -> ListDeploymentsResponse:
    if req.all_namespaces:
        rows = await hub.store.rows(
            DeploymentRow, "SELECT * FROM deployments ORDER BY namespace, name"
        )
        rows = [r for r in rows if p.sees(r.namespace)]
    else:
        p.require_namespace(req.namespace)
        rows = await hub.store.rows(
            DeploymentRow,
            "SELECT * FROM deployments WHERE namespace = ? ORDER BY name",
            (req.namespace,),
        )
    return ListDeploymentsResponse(deployments=await _views(hub, rows))


class _InstanceRow(NamedTuple):
    """A live instance, where it runs and whose it is (list_instances)."""

    id: str
    nest_id: str
    nest: str
    namespace: str | None  # None: its deployment was deleted
    deployment: str | None
    deployment_id: str
    digest: str
    state: str
    in_flight: int
    exit_reason: str | None
    started_ms: int
    updated_ms: int


async def list_instances(
    hub: Hub, p: Principal, req: ListInstancesRequest
) -> ListInstancesResponse:
    rows = await hub.store.rows(
        _InstanceRow,
        "SELECT i.*, n.name AS nest, d.namespace, d.name AS deployment FROM instances i"
        " JOIN nests n ON n.id = i.nest_id LEFT JOIN deployments d ON d.id = i.deployment_id"
        " WHERE i.state NOT IN ('stopped', 'failed') ORDER BY d.namespace, d.name, i.started_ms",
    )
    out = []
    for r in rows:
        ns = r.namespace or ""
        if (req.namespace and ns != req.namespace) or (ns and not p.sees(ns)):
            continue
        out.append(
            Instance(
                id=r.id,
                nest_id=r.nest_id,
                nest=r.nest,
                namespace=ns,
                deployment=r.deployment or "",
                deployment_id=r.deployment_id,
                digest=r.digest,
                state=r.state,
                in_flight=r.in_flight,
                exit_reason=r.exit_reason,
                started_ms=r.started_ms,
                updated_ms=r.updated_ms,
            )
        )
    return ListInstancesResponse(instances=out)


async def scale_deployment(
    hub: Hub, p: Principal, req: ScaleDeploymentRequest
) -> DeploymentResponse:
    row = await find_deployment(hub, p, req.namespace, req.name)
    scale = ScalePolicy.model_validate_json(row.scale)
    if req.replicas > scale.max:
        raise InvalidError(
            f"{req.name} allows at most {scale.max} instances (scale.max); raise it in x-agen/config.json and redeploy",
            field="replicas",
        )

    def fn(tx: Tx) -> None:
        paused = tx.scalar("SELECT paused FROM deployments WHERE id = ?", (row.id,))
        if paused is None:
            raise NotFoundError(f"deployment {req.namespace}/{req.name} was deleted")
        if paused:
            raise ConflictError(
                f"{req.name} is stopped; `agen start {req.name}` first, then scale it"
            )
        if req.replicas > 0:  # held at 0 by a spent daily budget: 503 with the reset time
            from agen.hub.queue.budgets import require_budget_left

            require_budget_left(tx, row, tx.now_ms, f"scaling it to {req.replicas}")
        tx.execute(
            "UPDATE deployments SET desired = ?, manual_scale_ms = ?, last_activity_ms = ?, updated_ms = ? WHERE id = ?",
            (req.replicas, tx.now_ms, tx.now_ms, tx.now_ms, row.id),
        )
        tx.event(
            req.namespace, "deployment.scaled", deployment=req.name, data={"replicas": req.replicas}
        )
        write_log(tx, req.namespace, req.name, f"scaled to {req.replicas}")

    await hub.store.write(fn)
    hub.desired_state_changed()
    return DeploymentResponse(deployment=await _view_by_id(hub, row.id), changed=True)


async def pause_deployment(
    hub: Hub, p: Principal, req: PauseDeploymentRequest
) -> DeploymentResponse:
    row = await find_deployment(hub, p, req.namespace, req.name)
    scale = ScalePolicy.model_validate_json(row.scale)

    def fn(tx: Tx) -> None:
        if req.paused:
            tx.execute(
                "UPDATE deployments SET paused = 1, pause_reason = ?, desired = 0, updated_ms = ? WHERE id = ?",
                (req.reason, tx.now_ms, row.id),
            )
            if req.hold_runs:
                queue.hold_deployment(
                    tx, row.id, req.hold_until_ms, req.reason or "deployment stopped"
                )
            tx.event(
                req.namespace,
                "deployment.stopped",
                deployment=req.name,
                data={"reason": req.reason},
            )
            write_log(
                tx, req.namespace, req.name, "stopped" + (f": {req.reason}" if req.reason else "")
            )
        else:
            tx.execute(
                "UPDATE deployments SET paused = 0, pause_reason = NULL, desired = ?, last_activity_ms = ?,"
                " updated_ms = ? WHERE id = ?",
                (scale.min, tx.now_ms, tx.now_ms, row.id),
            )
            queue.resume_deployment_hold(tx, row.id)
            tx.event(req.namespace, "deployment.started", deployment=req.name)
            write_log(tx, req.namespace, req.name, "started")

    await hub.store.write(fn)
    hub.desired_state_changed()
    return DeploymentResponse(deployment=await _view_by_id(hub, row.id), changed=True)


async def delete_deployment(
    hub: Hub, p: Principal, req: DeleteDeploymentRequest
) -> DeleteDeploymentResponse:
    from agen.hub.events.notify import sync_bundle_target

    row = await find_deployment(hub, p, req.namespace, req.name)

    def fn(tx: Tx) -> tuple[list[str], int]:
        unfinished = tx.rows(
            _TaskId,
            f"SELECT id FROM tasks WHERE deployment_id = ? AND state IN {UNFINISHED}",
            (row.id,),
        )
        for t in unfinished:
            queue.cancel_task(tx, t.id, by=p.subject, reason="deployment deleted")
        cancelled = len(unfinished)
        ended = tx.execute(
            "UPDATE runs SET status = 'cancelled', epoch = epoch + 1, finished_ms = ?, updated_ms = ?,"
            " outcome = ? WHERE namespace = ? AND deployment = ? AND finished_ms IS NULL",
            (
                tx.now_ms,
                tx.now_ms,
                dumps({"status": "cancelled", "reason": "deployment_deleted", "summary": ""}),
                req.namespace,
                req.name,
            ),
        )
        tx.execute("DELETE FROM deployments WHERE id = ?", (row.id,))
        sync_bundle_target(tx, req.namespace, req.name, None)
        tx.event(
            req.namespace,
            "deployment.deleted",
            deployment=req.name,
            data={"cancelled_tasks": cancelled, "ended_runs": ended},
        )
        write_log(
            tx,
            req.namespace,
            req.name,
            f"deleted ({cancelled} tasks cancelled, {ended} runs ended)",
        )
        return [t.id for t in unfinished], ended

    cancelled_ids, ended = await hub.store.write(fn)
    hub.desired_state_changed()
    for task_id in cancelled_ids:
        hub.notify_cancelled(task_id)
    return DeleteDeploymentResponse(cancelled_tasks=len(cancelled_ids), ended_runs=ended)


class _LogRow(NamedTuple):
    """One line of ``deployment_logs``: the fields of a LogLine."""

    seq: int
    namespace: str
    deployment: str
    instance_id: str | None
    level: str
    message: str
    created_ms: int


async def get_logs(hub: Hub, p: Principal, req: GetLogsRequest) -> GetLogsResponse:
    """The newest ``limit`` lines after ``after_seq``; with wait_seconds, waits for new ones."""
    await find_deployment(hub, p, req.namespace, req.name)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + req.wait_seconds
    while True:
        sql = (
            f"SELECT {columns(_LogRow)} FROM deployment_logs"
            " WHERE namespace = ? AND deployment = ? AND seq > ?"
        )
        params: list[Any] = [req.namespace, req.name, req.after_seq]
        if req.instance:
            sql += " AND instance_id = ?"
            params.append(req.instance)
        rows = await hub.store.rows(
            _LogRow, sql + " ORDER BY seq DESC LIMIT ?", [*params, req.limit]
        )
        if rows or loop.time() >= deadline:
            break
        await asyncio.sleep(min(0.25, max(0.0, deadline - loop.time())))
    rows.reverse()
    lines = [LogLine.model_validate(r._asdict()) for r in rows]
    return GetLogsResponse(lines=lines, last_seq=lines[-1].seq if lines else req.after_seq)
