"""The Nest-facing RPC handlers (scope ``nest``): thin wrappers over the queue, lease gate and registry.

They are the only door a Nest has into the Hub, in-process or over HTTP (DESIGN.md §1). Each
refuses what would otherwise reach the Store as a constraint violation (an unknown Nest, an
instance id another Nest owns) with a 4xx naming the id, so a fuzzed or buggy Nest never
causes a 5xx. A stale lease is the queue's own FencedError (409), whichever door it came through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

from agen.domain import LeasedTaskRow, TaskRow, columns
from agen.errors import ConflictError, DeniedError, FencedError
from agen.hub import queue
from agen.hub.auth import Principal
from agen.hub.definitions import get_definition_files
from agen.hub.fleet.instances import record_saturation, report_status
from agen.hub.fleet.instances import register_nest as _register
from agen.hub.queue.nest_leasing import complete_from_nest, lease_for_nest, unknown_nest
from agen.hub.queue.progress import report_progress as _progress
from agen.hub.service import Hub
from agen.store import Tx, loads
from agen.wire import nests as m
from agen.wire.common import Ok

OK = Ok()
T = TypeVar("T")


class _NestName(NamedTuple):
    """An enrolled Nest's name and the labels its enrolment gave it (JSON text)."""

    name: str
    labels: str


class _Owned(NamedTuple):
    """An instance and the Nest that reported it."""

    id: str
    nest_id: str


class _Requester(NamedTuple):
    """Who started a root run."""

    id: str
    requested_by: str | None


def own_nest(p: Principal, nest_id: str) -> None:
    """A Nest's credential acts for its own Nest only (the in-process Nest's is not bound to one)."""
    if p.nest_id is not None and p.nest_id != nest_id:
        raise DeniedError(
            f"this Nest credential belongs to nest {p.nest_id}; it cannot act for nest {nest_id}",
            nest_id=nest_id,
        )


def _fenced(tx: Tx, p: Principal, task_id: str, op: Callable[[], T]) -> T:
    """A call fenced by a lease id: the fence (an id only its holder was given) decides, and only
    when it refuses is the task's holder looked up, so another Nest's call is told 403 without the
    stale-lease message naming the current lease. The common case costs no extra statement."""
    try:
        return op()
    except FencedError:
        _own_tasks(tx, p, [task_id])
        raise


def _own_tasks(tx: Tx, p: Principal, task_ids: list[str], *, fenced: bool = True) -> None:
    """A bound Nest reports only on tasks it leased (the lease id is the fence; this names the thief).
    A call ``fenced`` by a lease id leaves a task no Nest holds any more to the fence (409 stale
    lease, as for any Nest); an unfenced one (progress) is refused for it here."""
    if p.nest_id is None or not task_ids:
        return
    marks = ",".join("?" * len(task_ids))
    held = "lease_nest_id != ?" if fenced else "(lease_nest_id IS NULL OR lease_nest_id != ?)"
    other = tx.scalar(
        f"SELECT id FROM tasks WHERE id IN ({marks}) AND {held}",
        (*task_ids, p.nest_id),
    )
    if other is not None:
        raise DeniedError(
            f"task {other} is not leased by nest {p.nest_id}; a Nest reports only on its own leases",
            task_id=other,
        )


def _known_nest(tx: Tx, nest_id: str) -> None:
    if tx.scalar("SELECT 1 FROM nests WHERE id = ?", (nest_id,)) is None:
        raise unknown_nest(nest_id)


async def register_nest(
    hub: Hub, p: Principal, req: m.RegisterNestRequest
) -> m.RegisterNestResponse:
    def fn(tx: Tx) -> str:
        labels = req.labels
        if (
            p.nest_id is not None
        ):  # an enrolled Nest restarting: same name, its enrolment labels kept
            row = tx.row(
                _NestName, f"SELECT {columns(_NestName)} FROM nests WHERE id = ?", (p.nest_id,)
            )
            if row is None or row.name != req.name:
                raise DeniedError(
                    f"this Nest credential belongs to nest {p.nest_id}"
                    + (f" ({row.name})" if row else "")
                    + f", not {req.name!r}; start it with its own --name or enrol a new Nest",
                    nest=req.name,
                )
            labels = {**loads(row.labels, {}), **req.labels}
        return _register(
            tx, req.name, capacity=req.capacity, labels=labels, gateway_url=req.gateway_url
        )

    return m.RegisterNestResponse(nest_id=await hub.store.write(fn))


async def report_nest(hub: Hub, p: Principal, req: m.ReportNestRequest) -> m.ReportNestResponse:
    reports = list(
        {r.id: r for r in req.instances}.values()
    )  # one row per instance id: the last report wins

    own_nest(p, req.nest_id)

    def fn(tx: Tx) -> list[m.Assignment]:
        _known_nest(tx, req.nest_id)
        if reports:
            marks = ",".join("?" * len(reports))
            other = tx.row(
                _Owned,
                f"SELECT {columns(_Owned)} FROM instances WHERE id IN ({marks}) AND nest_id != ?",
                (*(r.id for r in reports), req.nest_id),
            )
            if other is not None:
                raise ConflictError(
                    f"instance {other.id} belongs to nest {other.nest_id}, not "
                    f"{req.nest_id}; a Nest reports only its own instances",
                    instance_id=other.id,
                )
        assignments = report_status(tx, req.nest_id, reports)
        record_saturation(tx, req.nest_id, req.saturated)
        return assignments

    return m.ReportNestResponse(assignments=await hub.store.write(fn))


async def get_definition_files_rpc(
    hub: Hub, p: Principal, req: m.GetDefinitionFilesRequest
) -> m.GetDefinitionFilesResponse:
    # Raw bytes in-process (Base64Bytes would read them as base64); over HTTP they serialize as base64.
    return m.GetDefinitionFilesResponse.model_construct(
        files=await get_definition_files(hub.store, req.definition_id)
    )


def leased_task(
    leased: LeasedTaskRow, *, started: bool, requesters: dict[str, str | None] | None = None
) -> m.LeasedTask:
    """A leased row as the Nest sees it. Validated from one dict: pydantic-core checks these
    fields faster than ``model_construct`` copies them in Python (measured: about two thirds of its
    time), and over HTTP the Nest's client validates the JSON it receives the same way.
    ``requesters``: the requester of each root run (``root_requesters``)."""
    row = leased.task
    requested_by = row.submitted_by
    if row.root_run_id is not None and requesters and row.root_run_id in requesters:
        requested_by = requesters[row.root_run_id]
    return m.LeasedTask.model_validate(
        {
            "id": row.id,
            "lease_id": leased.lease_id,
            "namespace": row.namespace,
            "deployment": row.deployment,
            "deployment_id": row.deployment_id,
            "input": row.input,
            "attachments": loads(row.attachments, []) or [],
            "attempts": row.attempts,
            "conversation_key": row.conversation_key,
            "labels": loads(row.labels, {}) or {},
            "trust": row.trust or "trusted",
            "source": row.source or "api",
            "model_tier": row.model_tier,
            "overrides": loads(row.overrides),
            "budget_pressure": leased.budget_pressure,
            "root_run_id": row.root_run_id,
            "parent_run_id": row.parent_run_id,
            "submitted_by": row.submitted_by,
            "requested_by": requested_by,
            "locks": dict(leased.locks),
            "started": started,
            "traceparent": row.traceparent,
            "depth": row.depth,
        }
    )


async def lease_tasks(hub: Hub, p: Principal, req: m.LeaseTasksRequest) -> m.LeaseTasksResponse:
    own_nest(p, req.nest_id)
    if hub.draining or req.limit == 0:
        return m.LeaseTasksResponse(tasks=[])

    def fn(tx: Tx) -> tuple[list[LeasedTaskRow], dict[str, str | None]]:
        rows = lease_for_nest(
            tx,
            deployment_id=req.deployment_id,
            nest_id=req.nest_id,
            instance_id=req.instance_id,
            limit=req.limit,
            lease_ms=req.lease_ms,
            start=True,
            registered_only=True,
        )
        return rows, root_requesters(tx, rows)

    rows, requesters = await hub.store.write(fn)
    tasks = [leased_task(r, started=True, requesters=requesters) for r in rows]
    return m.LeaseTasksResponse(tasks=tasks)


def root_requesters(tx: Tx, rows: list[LeasedTaskRow]) -> dict[str, str | None]:
    """Seed 000 §10: a delegated run (a child task, an A2A call with an agent's lineage, a reply)
    inherits its root run's requester (runs.requested_by), so an approval deep in a tree still names
    the person who started it, who then cannot approve it. By root run id; a task not yet in a tree
    (a fresh root) costs no query."""
    roots = sorted({r.task.root_run_id for r in rows if r.task.root_run_id is not None})
    if not roots:
        return {}
    marks = ",".join("?" * len(roots))
    found = tx.rows(
        _Requester, f"SELECT {columns(_Requester)} FROM runs WHERE id IN ({marks})", roots
    )
    return {f.id: f.requested_by for f in found}


async def mark_running(hub: Hub, p: Principal, req: m.MarkRunningRequest) -> Ok:
    def fn(tx: Tx) -> None:
        _fenced(
            tx,
            p,
            req.lease.task_id,
            lambda: queue.mark_running(tx, req.lease.task_id, req.lease.lease_id),
        )

    await hub.store.write(fn)
    return OK


async def extend_leases(
    hub: Hub, p: Principal, req: m.ExtendLeasesRequest
) -> m.ExtendLeasesResponse:
    """Each lease answered on its own (extended, lost, finished): a Nest back from a partition learns
    which of its leases moved on while the rest are extended (issue #31)."""
    if not req.leases:
        return m.ExtendLeasesResponse(leases=[])
    refs = [(ref.task_id, ref.lease_id) for ref in req.leases]
    done = await hub.store.write(
        lambda tx: queue.extend_leases(tx, refs, req.lease_ms, nest_id=p.nest_id)
    )
    return m.ExtendLeasesResponse(
        leases=[
            m.LeaseExtension(
                task_id=e.task_id, status=e.answer.value, expires_ms=e.expires_ms, detail=e.detail
            )
            for e in done
        ]
    )


async def complete_task(hub: Hub, p: Principal, req: m.CompleteTaskRequest) -> Ok:
    def fn(tx: Tx) -> TaskRow:
        return _fenced(
            tx,
            p,
            req.lease.task_id,
            lambda: complete_from_nest(
                tx,
                req.lease.task_id,
                req.lease.lease_id,
                status=req.status,
                outcome=req.outcome,
                error=req.error,
            ),
        )

    row = await hub.store.write(fn)
    if row.parent_task_id or row.reply_deployment:
        # a child's end may have woken its parent (or queued a reply): lease it now, not at the next poll
        hub.work.notify()
        hub.desired_state_changed()
    return OK


async def release_task(hub: Hub, p: Principal, req: m.ReleaseTaskRequest) -> Ok:
    def fn(tx: Tx) -> None:
        _fenced(
            tx,
            p,
            req.lease.task_id,
            lambda: queue.release_task(
                tx,
                req.lease.task_id,
                req.lease.lease_id,
                count_attempt=req.count_attempt,
                reason=req.reason,
            ),
        )

    await hub.store.write(fn)
    hub.work.notify()
    return OK


async def suspend_task(hub: Hub, p: Principal, req: m.SuspendTaskRequest) -> Ok:
    def fn(tx: Tx) -> None:
        _fenced(
            tx,
            p,
            req.lease.task_id,
            lambda: queue.suspend_task(tx, req.lease.task_id, req.lease.lease_id, req.wait_for),
        )

    await hub.store.write(fn)
    return OK


async def report_progress(
    hub: Hub, p: Principal, req: m.ReportProgressRequest
) -> m.ReportProgressResponse:
    def fn(tx: Tx) -> bool:
        _own_tasks(tx, p, [req.task_id], fenced=False)
        return _progress(tx, req.task_id, req.progress)

    return m.ReportProgressResponse(recorded=await hub.store.write(fn))


async def wait_for_work(hub: Hub, p: Principal, req: m.WaitForWorkRequest) -> m.WaitForWorkResponse:
    return m.WaitForWorkResponse(generation=await hub.work.wait(req.seen, req.wait_seconds))
