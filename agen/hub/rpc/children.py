"""Delegation RPC handlers (scope ``nest``): a running task's engine reaches the Hub through its
Nest for child tasks, the per-turn join/tree-budget check, descendant queries and signals, and
mid-run locks. Lineage and limits are the Hub's (agen.hub.queue.delegation); nothing here trusts the
caller for them. A Nest's own credential acts only for the tasks that Nest runs: each call names a
task (the parent, the waiter, the lock holder) whose lease the calling Nest must hold.
"""

from __future__ import annotations

import asyncio

from agen.domain import TaskRow
from agen.errors import DeniedError, NotFoundError
from agen.hub import queue
from agen.hub.auth import Principal
from agen.hub.queue import delegation as d
from agen.hub.queue.tasks import TERMINAL, get_task, task_event
from agen.hub.service import Hub
from agen.store import Tx, loads
from agen.wire import delegation as m
from agen.wire.common import Ok
from agen.wire.observe import QueryTaskRequest

OK = Ok()


def _runs_here(tx: Tx, p: Principal, task_id: str) -> None:
    """A bound Nest (``agen nest run``) acts only for a task it holds the lease of; the in-process
    Nest of ``agen up`` is not bound to one Nest and runs every task of its Hub."""
    if p.nest_id is None:
        return
    if tx.scalar("SELECT lease_nest_id FROM tasks WHERE id = ?", (task_id,)) != p.nest_id:
        raise DeniedError(
            f"task {task_id} is not running on nest {p.nest_id}: a Nest acts only for the tasks "
            "it holds the lease of",
            task_id=task_id,
        )


def _child(row: TaskRow | d.ChildEnd) -> m.ChildTask:
    return m.ChildTask(
        id=row.id,
        deployment=row.deployment,
        state=row.state.value,
        outcome=loads(row.outcome),
        error=row.error,
    )


async def submit_child_task(
    hub: Hub, p: Principal, req: m.SubmitChildTaskRequest
) -> m.ChildTaskResponse:
    def fn(tx: Tx) -> tuple[TaskRow, bool]:
        _runs_here(tx, p, req.parent_task_id)
        return d.submit_child(tx, req, p.subject)

    row, created = await hub.store.write(fn)
    if created:
        hub.desired_state_changed()
    return m.ChildTaskResponse(child=_child(row), created=created)


async def wait_child_task(
    hub: Hub, p: Principal, req: m.WaitChildTaskRequest
) -> m.ChildTaskResponse:
    await hub.store.read(lambda tx: _runs_here(tx, p, req.task_id))

    def read(tx: Tx) -> TaskRow:
        row = get_task(tx, req.child_id)
        if row.parent_task_id != req.task_id:
            d.require_descendant(tx, req.task_id, req.child_id)
        return row

    loop = asyncio.get_running_loop()
    deadline = loop.time() + req.wait_seconds
    seq = await hub.store.wait_for_events(0, 0)
    while True:
        row = await hub.store.read(read)
        remaining = deadline - loop.time()
        if row.state in TERMINAL or remaining <= 0:
            return m.ChildTaskResponse(child=_child(row))
        seq = await hub.store.wait_for_events(seq, min(remaining, 1.0))


async def check_turn(hub: Hub, p: Principal, req: m.CheckTurnRequest) -> m.CheckTurnResponse:
    def read(tx: Tx) -> m.CheckTurnResponse:
        _runs_here(tx, p, req.task_id)
        task = get_task(tx, req.task_id)
        return m.CheckTurnResponse(
            unfinished_children=d.unfinished_children(tx, req.task_id),
            results=[
                m.ChildResult(inbox_id=r.inbox_id, child=_child(r))
                for r in d.joined_results(tx, req.task_id)
            ],
            tree_budget_exceeded=d.tree_budget_exceeded(tx, task.root_task_id),
        )

    return await hub.store.read(read)


async def ack_inbox(hub: Hub, p: Principal, req: m.AckInboxRequest) -> Ok:
    def fn(tx: Tx) -> None:
        _runs_here(tx, p, req.task_id)
        d.ack_inbox(tx, req.task_id, list(req.inbox_ids))

    await hub.store.write(fn)
    return OK


async def query_child_task(hub: Hub, p: Principal, req: m.ChildTaskRef) -> m.QueryChildTaskResponse:
    from agen.hub.rpc.runs import query_task

    def check(tx: Tx) -> None:
        _runs_here(tx, p, req.task_id)
        d.require_descendant(tx, req.task_id, req.target)

    await hub.store.read(check)
    q = await query_task(hub, p, QueryTaskRequest(id=req.target))
    t = q.task
    view = m.ChildTaskView(
        id=t.id,
        deployment=t.deployment,
        state=t.state,
        progress=t.progress,
        outcome=t.outcome,
        wait_for=t.wait_for,
        now=q.now,
    )
    return m.QueryChildTaskResponse(task=view)


async def signal_child_task(hub: Hub, p: Principal, req: m.SignalChildTaskRequest) -> Ok:
    def fn(tx: Tx) -> None:
        _runs_here(tx, p, req.task_id)
        target = d.require_descendant(tx, req.task_id, req.target)
        queue.write_inbox(tx, target.id, "signal", req.task_id, req.message)
        task_event(tx, target, "task.signalled", {"from_task": req.task_id})

    await hub.store.write(fn)
    hub.work.notify()
    return OK


async def acquire_lock(hub: Hub, p: Principal, req: m.AcquireLockRequest) -> m.AcquireLockResponse:
    def fn(tx: Tx) -> int | None:
        _runs_here(tx, p, req.task_id)
        task = get_task(tx, req.task_id)
        return queue.acquire_lock(
            tx, task.namespace, req.name, req.task_id, int(req.ttl_seconds * 1000)
        )

    return m.AcquireLockResponse(fence=await hub.store.write(fn))


async def release_lock(hub: Hub, p: Principal, req: m.ReleaseLockRequest) -> m.ReleaseLockResponse:
    def fn(tx: Tx) -> bool:
        _runs_here(tx, p, req.task_id)
        task = get_task(tx, req.task_id)
        return queue.release_lock(tx, task.namespace, req.name, req.task_id)

    released = await hub.store.write(fn)
    if released:
        hub.work.notify()  # a task waiting on the lock may lease now
    return m.ReleaseLockResponse(released=released)


async def resolve_child_agent(
    hub: Hub, p: Principal, req: m.ResolveChildAgentRequest
) -> m.ResolveChildAgentResponse:
    """Seed 000 §10: a Manager resolving for one of its instances gets an agent token (1 h) naming
    the task's deployment as caller and the one deployment it may call. Delegation stays within
    the task's namespace, as for child tasks."""
    from agen.hub.call_keys import AGENT_TOKEN_TTL_MS, agent_token, signing_key

    def fn(tx: Tx) -> tuple[TaskRow, str | None]:
        _runs_here(tx, p, req.task_id)
        task = get_task(tx, req.task_id)
        callee = tx.scalar(
            "SELECT id FROM deployments WHERE namespace = ? AND name = ?",
            (req.namespace, req.deployment),
        )
        return task, callee

    task, callee = await hub.store.read(fn)
    if req.namespace != task.namespace:
        raise DeniedError(
            f"delegation stays within namespace {task.namespace}; {req.namespace}/"
            f"{req.deployment} is outside it",
            namespace=req.namespace,
        )
    if callee is None:
        raise NotFoundError(
            f"agent {req.namespace}/{req.deployment} is not deployed; deploy it (agen deploy) "
            "or delegate to another agent",
            deployment=req.deployment,
        )
    now = hub.clock()
    key = await signing_key(hub.store, now)
    token = agent_token(
        key,
        namespace=task.namespace,
        deployment=task.deployment,
        instance=task.lease_instance_id,
        depth=task.depth,
        callee=f"{req.namespace}/{req.deployment}",
        now_ms=now,
        trust=task.trust,  # what it starts over A2A gets no more trust than it has
    )
    urls = [f"{u.rstrip('/')}/a2a/{req.namespace}/{req.deployment}" for u in hub.gateway_urls]
    return m.ResolveChildAgentResponse(
        urls=urls, call_token=token, expires_ms=now + AGENT_TOKEN_TTL_MS
    )


async def count_a2a_call(hub: Hub, p: Principal, req: m.CountA2ACallRequest) -> Ok:
    def fn(tx: Tx) -> None:
        _runs_here(tx, p, req.task_id)
        d.count_a2a_call(tx, req.task_id, req.call_key)

    await hub.store.write(fn)
    return OK
