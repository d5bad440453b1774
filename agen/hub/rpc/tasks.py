"""Task RPCs over the queue (agen.hub.queue): submit, get with wait, list, cancel, pause, resume."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from agen.bundle.overrides import TRUST_RANK
from agen.domain import LIVE, DeploymentKind, DeploymentRow, TaskRow, TaskState, columns
from agen.domain.artifacts import save_files_tx
from agen.domain.attachments import check_files, decode_files
from agen.errors import DeniedError, InvalidError, NotFoundError
from agen.hub import queue
from agen.hub.auth import Principal
from agen.hub.fleet.instances import instance_failing
from agen.hub.leader.autoscaler import ScalePolicy
from agen.hub.queue import admission
from agen.hub.queue.delegation import a2a_lineage
from agen.hub.queue.delivery import deliver, queue_mode
from agen.hub.queue.nest_leasing import budget_wait_reason
from agen.hub.queue.redaction import redact_task_input
from agen.hub.rpc._known import check_namespace, require_known_deployment
from agen.hub.rpc.deployments import find_deployment
from agen.hub.service import Hub
from agen.otel.ids import check_traceparent
from agen.store import Tx, loads
from agen.wire.tasks import (
    TERMINAL_STATES,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    PauseTaskRequest,
    ResumeTaskRequest,
    SubmitTaskRequest,
    Task,
    TaskResponse,
)

if TYPE_CHECKING:
    from agen.wire.signals import DryRunTaskResponse

PRIORITY_NAMES = {v: k for k, v in queue.PRIORITIES.items()}


def effective_trust(asked: str | None, principal_trust: str) -> str:
    if asked is None or TRUST_RANK[asked] > TRUST_RANK.get(principal_trust, 1):
        return principal_trust if principal_trust in TRUST_RANK else "trusted"
    return asked


@dataclass(slots=True)
class TaskDetails:
    """The parts of a task view read from other tables (locks, its run, pending approvals) and why a
    queued task waits; read for a whole page at once (``_many_details``)."""

    locks: list[str] = field(default_factory=list)
    run_id: str | None = None
    effect_unknown: bool = False
    pending_approvals: list[str] = field(default_factory=list)
    waits: bool = False  # a queued task: wait_reason below replaces the row's own
    wait_reason: str | None = None
    wait_detail: str | None = None


def task_view(row: TaskRow, *, extra: TaskDetails | None = None) -> Task:
    extra = extra or TaskDetails()
    return Task(
        id=row.id,
        namespace=row.namespace,
        deployment=row.deployment,
        deployment_id=row.deployment_id,
        state=row.state.value,
        input=row.input,
        attachments=loads(row.attachments, []) or [],
        source=row.source,
        conversation_key=row.conversation_key,
        labels=loads(row.labels, {}),
        priority=PRIORITY_NAMES.get(row.priority, "normal"),
        idempotency_key=row.idempotency_key,
        schedule_key=row.schedule_key,
        not_before_ms=row.not_before_ms,
        not_after_ms=row.not_after_ms,
        attempts=row.attempts,
        wait_reason=extra.wait_reason if extra.waits else row.wait_reason,
        wait_detail=extra.wait_detail,
        wait_for=row.wait_for,
        held=row.held,
        held_until_ms=row.held_until_ms,
        hold_reason=row.hold_reason,
        progress=loads(row.progress),
        outcome=loads(row.outcome),
        error=row.error,
        trust=row.trust,
        model_tier=row.model_tier,
        locks=extra.locks,
        run_id=extra.run_id,
        effect_unknown=extra.effect_unknown,
        pending_approvals=extra.pending_approvals,
        parent_task_id=row.parent_task_id,
        root_task_id=row.root_task_id,
        depth=row.depth,
        on_parent_end=row.on_parent_end,
        cancel_at_ms=row.cancel_at_ms,
        parent_run_id=row.parent_run_id,
        root_run_id=row.root_run_id,
        created_ms=row.created_ms,
        started_ms=row.started_ms,
        finished_ms=row.finished_ms,
        updated_ms=row.updated_ms,
    )


def _details(tx: Tx, row: TaskRow) -> TaskDetails:
    """The joined parts of a task view, read in one transaction."""
    return _many_details(tx, [row])[0]


class _Part(NamedTuple):
    """One joined part of a task view: a lock it holds (0), its run (1), a pending approval (2)."""

    part: int
    task_id: str
    id: str
    effect_unknown: bool


class _Visible(NamedTuple):
    """What decides whether a caller may see a task."""

    namespace: str
    deployment: str
    conversation_key: str | None


def _many_details(tx: Tx, rows: list[TaskRow]) -> list[TaskDetails]:
    """_details for a page of tasks: their locks, runs and pending approvals in one statement (one
    round trip, not three, and not three per task)."""
    ids = [row.id for row in rows]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    parts = tx.rows(
        _Part,
        f"SELECT 0 AS part, task_id, name AS id, 0 AS effect_unknown, name AS by_name, 0 AS by_time"
        f" FROM task_locks WHERE task_id IN ({marks})"
        f" UNION ALL SELECT 1, task_id, id, effect_unknown, '', 0 FROM runs WHERE task_id IN ({marks})"
        f" UNION ALL SELECT 2, task_id, id, 0, '', created_ms FROM approvals"
        f" WHERE task_id IN ({marks}) AND state = 'pending'"
        " ORDER BY part, by_name, by_time",
        [*ids, *ids, *ids],
    )
    details = {row.id: TaskDetails() for row in rows}
    for part in parts:
        found = details[part.task_id]
        if part.part == 0:
            found.locks.append(part.id)
        elif part.part == 1:
            found.run_id, found.effect_unknown = part.id, part.effect_unknown
        else:
            found.pending_approvals.append(part.id)
    return [_detail(tx, row, details[row.id]) for row in rows]


def _detail(tx: Tx, row: TaskRow, extra: TaskDetails) -> TaskDetails:
    if row.state == TaskState.QUEUED:
        extra.waits = True
        extra.wait_reason = budget_wait_reason(
            tx, row, queue.wait_reason(tx, row, now_ms=tx.now_ms)
        )
        failing = (
            instance_failing(tx, row.deployment_id) if extra.wait_reason == "capacity" else None
        )
        if failing is not None:
            extra.wait_reason, extra.wait_detail = "instance_failing", failing
    return extra


def _callee_may_see(p: Principal, namespace: str, deployment: str, key: str | None) -> bool:
    """A call token sees only its own A2A tasks (conversation ``a2a:<caller>:…``) of its callee."""
    if p.call is None:
        return True
    mine = (key or "").startswith(f"a2a:{p.call.caller}:")
    return mine and p.call.allows(namespace, deployment)


def _own_keys(p: Principal, req: SubmitTaskRequest) -> None:
    """A call token submits only into its own A2A conversations and message ids (what the Gateway
    makes: ``a2a:<caller>:<contextId>``, ``a2a:<caller>:msg:<id>``), never into anyone else's."""
    if p.call is None:
        return
    own = f"a2a:{p.call.caller}:"
    for name, key in (
        ("conversation_key", req.conversation_key),
        ("idempotency_key", req.idempotency_key),
    ):
        if not (key or "").startswith(own):
            raise DeniedError(
                f"a call token submits only A2A tasks of its own: {name} must start with {own}",
                field=name,
            )


async def load_task(hub: Hub, p: Principal, task_id: str, namespace: str | None = None) -> Task:
    def fn(tx: Tx) -> Task | None:
        row = tx.row(TaskRow, "SELECT * FROM tasks WHERE id = ?", (task_id,))
        if row is None:
            return None
        return task_view(row, extra=_details(tx, row))

    task = await hub.store.read(fn)
    if (
        task is None
        or not p.sees(task.namespace)
        or not _callee_may_see(p, task.namespace, task.deployment, task.conversation_key)
    ):
        raise NotFoundError(
            f"task {task_id} not found; `agen tasks` lists recent tasks", task=task_id
        )
    check_namespace("task", task_id, task.namespace, namespace)
    return task


async def submit_task(hub: Hub, p: Principal, req: SubmitTaskRequest) -> TaskResponse:
    return await submit(hub, p, req)


async def submit(
    hub: Hub, p: Principal, req: SubmitTaskRequest, *, parent_task_id: str | None = None
) -> TaskResponse:
    """SubmitTask, and the Hub's own submissions of a child task (``parent_task_id``: the child joins the
    parent's tree; the public request has no such field, seed 000 §6)."""
    p.require_namespace(req.namespace)
    trust = effective_trust(req.trust, p.trust)
    _own_keys(p, req)
    caller = p.call.caller_deployment if p.call is not None else None
    if req.parent_run_id is not None and caller is None:
        raise DeniedError(
            "parent_run_id (A2A lineage) is accepted only with an agent's call token; submit "
            "without it to start a new tree",
            field="parent_run_id",
        )

    files = decode_files(req.attachments)
    if files:
        check_files(files)  # before the transaction: a bad file costs no writer time

    def fn(tx: Tx) -> tuple[Task, bool, bool]:
        lineage = None
        if req.parent_run_id is not None and caller is not None:
            lineage = a2a_lineage(tx, caller[0], caller[1], req.parent_run_id)
        # The deployment is found inside the insert's transaction: one writer statement instead of a
        # read on another thread first, and no window where it is deleted in between.
        current = tx.row(
            DeploymentRow,
            "SELECT * FROM deployments WHERE namespace = ? AND name = ?",
            (req.namespace, req.deployment),
        )
        if current is None:
            raise NotFoundError(
                f"deployment {req.namespace}/{req.deployment} not found; `agen ps` lists deployments,"
                " `agen deploy <dir>` creates one",
                deployment=req.deployment,
                namespace=req.namespace,
            )
        new = queue.NewTask(
            namespace=req.namespace,
            deployment_id=current.id,
            deployment=current.name,
            deployment_kind=current.kind,
            input=redact_task_input(tx, current, req.input),
            conversation_key=req.conversation_key,
            labels=dict(req.labels),
            priority=req.priority,
            idempotency_key=req.idempotency_key,
            schedule_key=req.schedule_key,
            not_before_ms=req.not_before_ms,
            not_after_ms=req.not_after_ms,
            locks=list(req.locks),
            trust=trust,
            model_tier=req.model_tier,
            overrides=req.overrides.stored() if req.overrides else None,
            submitted_by=p.subject,
            traceparent=check_traceparent(req.traceparent) if req.traceparent else None,
            parent_task_id=parent_task_id or (lineage.parent_task_id if lineage else None),
            on_parent_end=req.on_parent_end,
        )
        if files:
            stored = save_files_tx(tx, req.namespace, files)
            new.attachments = [a.model_dump() for a in stored]
        into = deliver(tx, current, new, queue_mode(current, req.delivery), by=p.subject)
        if into is not None:  # collect merged it, or steer handed it to the running task
            if files:  # raised inside the transaction: nothing of it is kept
                raise InvalidError(
                    "not supported yet: files with a submission the conversation's queue mode "
                    "merges into a queued task or hands to the running one (collect, steer); "
                    "submit it with delivery followup",
                    field="attachments",
                )
            return task_view(into, extra=_details(tx, into)), False, False
        admission.admit(tx, current, tx.now_ms)
        row, created = queue.submit_task(tx, new)
        if lineage is not None and created:  # the calling run's tree, as submit_child records it
            tx.execute(
                "UPDATE tasks SET parent_run_id = ?, root_run_id = ?, depth = ? WHERE id = ?",
                (lineage.parent_run_id, lineage.root_run_id, lineage.depth, row.id),
            )
            row = row._replace(
                parent_run_id=lineage.parent_run_id,
                root_run_id=lineage.root_run_id,
                depth=lineage.depth,
            )
        view = task_view(row, extra=TaskDetails(locks=sorted(set(new.locks))))
        return view, created, created and _may_scale_up(current)

    task, created, scale = await hub.store.write(fn)
    if scale:
        hub.desired_state_changed()  # the leader's scheduler may start an instance for it now
    elif created:
        hub.work.notify()  # its instances lease it; the leader's next tick sees it anyway
    return TaskResponse(task=task, created=created)


def _may_scale_up(d: DeploymentRow) -> bool:
    """Whether a new task can change what the leader's scheduler decides for its deployment: only when
    the deployment may run more instances than it wants now (scale from zero, autoscaling up, a task
    deployment's instance per task). A deployment at its maximum already leases the task, and a tick
    on every submit would run the scheduler's statements (about 30, 3 commits) beside each task."""
    if d.kind == DeploymentKind.TASK:
        return True
    return d.desired < ScalePolicy.from_json(d.kind, loads(d.scale)).max


async def get_task(hub: Hub, p: Principal, req: GetTaskRequest) -> TaskResponse:
    """With wait_seconds: until the task ends, starts waiting for an approval, or waits on a deployment whose
    instances keep failing to start (wait_reason instance_failing: it would wait forever)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + req.wait_seconds
    seen = await hub.store.wait_for_change(-1, 0)
    while True:
        task = await load_task(hub, p, req.id, req.namespace)
        remaining = deadline - loop.time()
        if (
            task.state in TERMINAL_STATES
            or task.pending_approvals
            or task.wait_reason == "instance_failing"
            or remaining <= 0
        ):
            return TaskResponse(task=task)
        while remaining > 0:  # the whole view is read again only when it may be the answer
            seen = await hub.store.wait_for_change(seen, min(remaining, 1.0))
            remaining = deadline - loop.time()
            if not await _still_running(hub, req.id):
                break


class _Running(NamedTuple):
    state: TaskState
    asks: bool  # a pending approval


async def _still_running(hub: Hub, task_id: str) -> bool:
    """Whether a waited-for task is still leased or running with no approval pending: then the
    events since the last look (its run starting, checkpoints) change nothing GetTask answers, and one
    statement says so instead of the task's whole view (six, beside the run's own writes)."""
    row = await hub.store.row(
        _Running,
        "SELECT t.state, EXISTS (SELECT 1 FROM approvals a WHERE a.task_id = t.id"
        " AND a.state = 'pending') AS asks FROM tasks t WHERE t.id = ?",
        (task_id,),
    )
    return row is not None and row.state in LIVE and not row.asks


async def list_tasks(hub: Hub, p: Principal, req: ListTasksRequest) -> ListTasksResponse:
    p.require_namespace(req.namespace)
    await require_known_deployment(hub, [req.namespace], req.deployment, "tasks")
    now = hub.clock()
    sql = "SELECT * FROM tasks WHERE namespace = ?"
    params: list[Any] = [req.namespace]
    if req.deployment:
        sql += " AND deployment = ?"
        params.append(req.deployment)
    for key, value in req.labels.items():
        sql += " AND EXISTS (SELECT 1 FROM json_each(tasks.labels) WHERE json_each.key = ? AND json_each.value = ?)"
        params += [key, value]
    if req.scheduled:
        sql += " AND state = 'queued' AND not_before_ms > ? ORDER BY not_before_ms, seq LIMIT ?"
        params += [now, req.limit]
    else:
        if req.state:
            sql += " AND state = ?"
            params.append(req.state)
        sql += " ORDER BY created_ms DESC, seq DESC LIMIT ?"
        params.append(req.limit)

    def fn(tx: Tx) -> list[Task]:
        rows = tx.rows(TaskRow, sql, params)
        return [
            task_view(r, extra=extra)
            for r, extra in zip(rows, _many_details(tx, rows), strict=True)
        ]

    return ListTasksResponse(tasks=await hub.store.read(fn))


async def _task_namespace(
    hub: Hub, p: Principal, task_id: str, namespace: str | None = None
) -> None:
    row = await hub.store.row(
        _Visible, f"SELECT {columns(_Visible)} FROM tasks WHERE id = ?", (task_id,)
    )
    if (
        row is None
        or not p.sees(row.namespace)
        or not _callee_may_see(p, row.namespace, row.deployment, row.conversation_key)
    ):
        raise NotFoundError(
            f"task {task_id} not found; `agen tasks` lists recent tasks", task=task_id
        )
    check_namespace("task", task_id, row.namespace, namespace)


async def cancel_task(hub: Hub, p: Principal, req: CancelTaskRequest) -> TaskResponse:
    await _task_namespace(hub, p, req.id, req.namespace)
    await hub.store.write(lambda tx: queue.cancel_task(tx, req.id, by=p.subject, reason=req.reason))
    hub.notify_cancelled(req.id)
    return TaskResponse(task=await load_task(hub, p, req.id))


async def pause_task(hub: Hub, p: Principal, req: PauseTaskRequest) -> TaskResponse:
    await _task_namespace(hub, p, req.id, req.namespace)
    await hub.store.write(lambda tx: queue.pause_task(tx, req.id, req.hold_until_ms, req.reason))
    return TaskResponse(task=await load_task(hub, p, req.id))


async def resume_task(hub: Hub, p: Principal, req: ResumeTaskRequest) -> TaskResponse:
    await _task_namespace(hub, p, req.id, req.namespace)
    await hub.store.write(lambda tx: queue.resume_task(tx, req.id))
    hub.desired_state_changed()
    return TaskResponse(task=await load_task(hub, p, req.id))


async def dry_run_task(hub: Hub, p: Principal, req: SubmitTaskRequest) -> DryRunTaskResponse:
    """Every admission check for this task, without taking a rate token or queuing it."""
    dep = await find_deployment(hub, p, req.namespace, req.deployment)
    now = hub.clock()

    def fn(tx: Tx) -> admission.Verdict:
        # admission reads the deployment as stored, with the budget and gate (agen.hub.queue)
        current = tx.row(DeploymentRow, "SELECT * FROM deployments WHERE id = ?", (dep.id,))
        if current is None:
            raise NotFoundError(f"deployment {req.namespace}/{req.deployment} was deleted")
        return admission.dry_run(tx, current, now)

    verdict = await hub.store.write(fn)
    from agen.wire.signals import DryRunTaskResponse  # not at import: ~7 ms most Hubs never need

    return DryRunTaskResponse.model_validate(verdict.to_dict())
