"""The Nest-facing RPC handlers (scope ``nest``): thin wrappers over the queue, lease gate and registry.

They are the only door a Nest has into the Hub, in-process or over HTTP (DESIGN.md §1). Each
refuses what would otherwise reach the Store as a constraint violation (an unknown Nest, an
instance id another Nest owns) with a 4xx naming the id, so a fuzzed or buggy Nest never
causes a 5xx. A stale lease is the queue's own FencedError (409), whichever door it came through.
"""

from __future__ import annotations

from typing import Any

from agen.api.models import nests as m
from agen.api.models.common import Ok
from agen.errors import AgenError, ConflictError, NotFoundError
from agen.hub import queue
from agen.hub.auth import Principal
from agen.hub.definitions import get_definition_files
from agen.hub.instances import register_nest as _register
from agen.hub.instances import report_status
from agen.hub.lease_gate import complete_from_nest, lease_for_nest
from agen.hub.progress import report_progress as _progress
from agen.hub.service import Hub
from agen.store import Tx, loads

OK = Ok()


def _known_nest(tx: Tx, nest_id: str) -> None:
    if tx.scalar("SELECT 1 FROM nests WHERE id = ?", (nest_id,)) is None:
        raise NotFoundError(
            f"nest {nest_id} is not registered; call RegisterNest first", nest_id=nest_id
        )


async def register_nest(
    hub: Hub, p: Principal, req: m.RegisterNestRequest
) -> m.RegisterNestResponse:
    nest_id = await hub.store.write(
        lambda tx: _register(tx, req.name, capacity=req.capacity, labels=req.labels)
    )
    return m.RegisterNestResponse(nest_id=nest_id)


async def report_nest(hub: Hub, p: Principal, req: m.ReportNestRequest) -> m.ReportNestResponse:
    reports = list(
        {r.id: r for r in req.instances}.values()
    )  # one row per instance id: the last report wins

    def fn(tx: Tx) -> list[m.Assignment]:
        _known_nest(tx, req.nest_id)
        if reports:
            marks = ",".join("?" * len(reports))
            other = tx.one(
                f"SELECT id, nest_id FROM instances WHERE id IN ({marks}) AND nest_id != ?",
                (*(r.id for r in reports), req.nest_id),
            )
            if other is not None:
                raise ConflictError(
                    f"instance {other['id']} belongs to nest {other['nest_id']}, not "
                    f"{req.nest_id}; a Nest reports only its own instances",
                    instance_id=other["id"],
                )
        return report_status(tx, req.nest_id, reports)

    return m.ReportNestResponse(assignments=await hub.store.write(fn))


async def get_definition_files_rpc(
    hub: Hub, p: Principal, req: m.GetDefinitionFilesRequest
) -> m.GetDefinitionFilesResponse:
    # Raw bytes in-process (Base64Bytes would read them as base64); over HTTP they serialize as base64.
    return m.GetDefinitionFilesResponse.model_construct(
        files=await get_definition_files(hub.store, req.definition_id)
    )


def leased_task(row: dict[str, Any], *, started: bool) -> m.LeasedTask:
    """A leased row as the Nest sees it. Built without re-validating what the Store just wrote (the
    hot path); over HTTP the Nest's client validates the JSON it receives."""
    locks = row.get("locks") or {}
    return m.LeasedTask.model_construct(
        id=row["id"],
        lease_id=row["lease_id"],
        namespace=row["namespace"],
        deployment=row["deployment"],
        deployment_id=row["deployment_id"],
        input=row["input"],
        attempts=int(row.get("attempts") or 0),
        conversation_key=row.get("conversation_key"),
        labels=loads(row.get("labels"), {}) or {},
        trust=row.get("trust") or "trusted",
        source=row.get("source") or "api",
        model_tier=row.get("model_tier"),
        overrides=loads(row.get("overrides")),
        budget_pressure=bool(row.get("budget_pressure")),
        root_run_id=row.get("root_run_id"),
        parent_run_id=row.get("parent_run_id"),
        submitted_by=row.get("submitted_by"),
        locks=dict(locks) if isinstance(locks, dict) else {},
        started=started,
        traceparent=row.get("traceparent"),
    )


async def lease_tasks(hub: Hub, p: Principal, req: m.LeaseTasksRequest) -> m.LeaseTasksResponse:
    if hub.draining or req.limit == 0:
        return m.LeaseTasksResponse(tasks=[])

    def fn(tx: Tx) -> list[dict[str, Any]]:
        _known_nest(tx, req.nest_id)
        return lease_for_nest(
            tx,
            deployment_id=req.deployment_id,
            nest_id=req.nest_id,
            instance_id=req.instance_id,
            limit=req.limit,
            lease_ms=req.lease_ms,
            start=True,
        )

    rows = await hub.store.write(fn)
    return m.LeaseTasksResponse(tasks=[leased_task(r, started=True) for r in rows])


async def mark_running(hub: Hub, p: Principal, req: m.MarkRunningRequest) -> Ok:
    await hub.store.write(lambda tx: queue.mark_running(tx, req.lease.task_id, req.lease.lease_id))
    return OK


async def extend_leases(
    hub: Hub, p: Principal, req: m.ExtendLeasesRequest
) -> m.ExtendLeasesResponse:
    if not req.leases:
        return m.ExtendLeasesResponse(lost=[])

    def fn(tx: Tx) -> list[str]:
        lost = []
        for ref in req.leases:
            try:
                queue.extend_lease(tx, ref.task_id, ref.lease_id, req.lease_ms)
            except AgenError:
                lost.append(ref.task_id)
        return lost

    return m.ExtendLeasesResponse(lost=await hub.store.write(fn))


async def complete_task(hub: Hub, p: Principal, req: m.CompleteTaskRequest) -> Ok:
    row = await hub.store.write(
        lambda tx: complete_from_nest(
            tx,
            req.lease.task_id,
            req.lease.lease_id,
            status=req.status,
            outcome=req.outcome,
            error=req.error,
        )
    )
    if row.get("parent_task_id") or row.get("reply_deployment"):
        # a child's end may have woken its parent (or queued a reply): lease it now, not at the next poll
        hub.work.notify()
        hub.desired_state_changed()
    return OK


async def release_task(hub: Hub, p: Principal, req: m.ReleaseTaskRequest) -> Ok:
    await hub.store.write(
        lambda tx: queue.release_task(
            tx,
            req.lease.task_id,
            req.lease.lease_id,
            count_attempt=req.count_attempt,
            reason=req.reason,
        )
    )
    hub.work.notify()
    return OK


async def suspend_task(hub: Hub, p: Principal, req: m.SuspendTaskRequest) -> Ok:
    await hub.store.write(
        lambda tx: queue.suspend_task(tx, req.lease.task_id, req.lease.lease_id, req.wait_for)
    )
    return OK


async def report_progress(
    hub: Hub, p: Principal, req: m.ReportProgressRequest
) -> m.ReportProgressResponse:
    return m.ReportProgressResponse(
        recorded=await hub.store.write(lambda tx: _progress(tx, req.task_id, req.progress))
    )


async def wait_for_work(hub: Hub, p: Principal, req: m.WaitForWorkRequest) -> m.WaitForWorkResponse:
    return m.WaitForWorkResponse(generation=await hub.work.wait(req.seen, req.wait_seconds))
