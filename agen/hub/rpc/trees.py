"""Tree RPCs: GetTaskTree, and CancelTask/PauseTask/ResumeTask with ``tree`` and graceful cancel.

The single-task, hard forms are the handlers in agen.hub.rpc.tasks; this module adds the scope (one
task or its whole tree) and graceful cancel's wait. The wait blocks the call until every task
given a wrap-up turn has ended or the grace period passed (by the Hub's clock, so tests inject
one), then stops the stragglers; the deadline is also stored on each task (``cancel_at_ms``), so
the leader stops them even if this call never returns.
"""

from __future__ import annotations

import functools

from agen.domain import RunUsage, columns
from agen.errors import InvalidError
from agen.hub.auth import Principal
from agen.hub.queue import trees
from agen.hub.rpc import tasks as t
from agen.hub.service import Hub
from agen.store import Tx
from agen.wire.tasks import (
    CancelTaskRequest,
    GetTaskTreeRequest,
    GetTaskTreeResponse,
    PauseTaskRequest,
    ResumeTaskRequest,
    TaskResponse,
    TaskTreeNode,
)

POLL_S = 0.5  # the longest one wait for events lasts (the clock is checked between waits)


async def get_task_tree(hub: Hub, p: Principal, req: GetTaskTreeRequest) -> GetTaskTreeResponse:
    await t._task_namespace(hub, p, req.id, req.namespace)
    now = hub.clock()

    def fn(tx: Tx) -> GetTaskTreeResponse:
        rows = trees.tree_rows(tx, req.id)
        ids = [r.id for r in rows]
        marks = ",".join("?" * len(ids))
        usage = {
            u.task_id: u
            for u in tx.rows(
                RunUsage, f"SELECT {columns(RunUsage)} FROM runs WHERE task_id IN ({marks})", ids
            )
        }
        children = trees.unfinished_children(tx, ids)
        nodes = []
        for row, extra in zip(rows, t._many_details(tx, rows), strict=True):
            u = usage.get(row.id) or RunUsage(row.id)
            started = row.started_ms
            nodes.append(
                TaskTreeNode(
                    task=t.task_view(row, extra=extra),
                    cost_usd=u.cost_usd,
                    tokens=u.input_tokens + u.output_tokens,
                    duration_ms=None
                    if started is None
                    else max(0, (row.finished_ms or now) - started),
                    unfinished_children=children.get(row.id, 0),
                )
            )
        return GetTaskTreeResponse(root_task_id=rows[0].root_task_id, tasks=nodes)

    return await hub.store.read(fn)


async def cancel_task(hub: Hub, p: Principal, req: CancelTaskRequest) -> TaskResponse:
    """Hard: stop the task (``tree``: every unfinished task of its tree) at once. Graceful: running tasks
    get a wrap-up turn first; this call returns when they ended or the grace period is over. Every task
    this ended (on_parent_end cascades included) gets the in-process stop hint."""
    graceful = req.mode == "graceful"
    if req.grace_period_seconds is not None and not graceful:
        raise InvalidError(
            "grace_period_seconds applies to mode graceful only; add mode graceful or leave it out",
            field="grace_period_seconds",
        )
    await t._task_namespace(hub, p, req.id, req.namespace)
    before = await hub.store.read(lambda tx: trees.tree_unfinished(tx, req.id))
    if graceful:
        grace_ms = int((req.grace_period_seconds or trees.DEFAULT_GRACE_S) * 1000)
        deadline = hub.clock() + grace_ms
        live = await hub.store.write(
            lambda tx: trees.begin_graceful_cancel(
                tx, req.id, tree=req.tree, grace_ms=grace_ms, by=p.subject, reason=req.reason
            )
        )
        _notify(hub, before, await hub.store.read(lambda tx: trees.unfinished(tx, before)))
        await _wait_until_ended(hub, live, deadline)
        await hub.store.write(lambda tx: _stop_stragglers(tx, live, p.subject))
    else:
        await hub.store.write(
            lambda tx: trees.cancel_scope(
                tx, req.id, tree=req.tree, by=p.subject, reason=req.reason
            )
        )
    _notify(hub, before, await hub.store.read(lambda tx: trees.unfinished(tx, before)))
    return TaskResponse(task=await t.load_task(hub, p, req.id))


def _stop_stragglers(tx: Tx, task_ids: list[str], by: str) -> None:
    for tid in trees.unfinished(tx, task_ids):
        trees.cancel_scope(
            tx,
            tid,
            tree=False,
            by=by,
            reason="graceful cancel: the grace period ended before the run finished",
        )


async def _wait_until_ended(hub: Hub, task_ids: list[str], deadline_ms: int) -> None:
    seq = await hub.store.wait_for_events(0, 0)
    while task_ids:
        task_ids = await hub.store.read(functools.partial(trees.unfinished, task_ids=task_ids))
        left_ms = deadline_ms - hub.clock()
        if not task_ids or left_ms <= 0 or hub.shutdown_requested.is_set():
            return
        seq = await hub.store.wait_for_events(seq, min(left_ms / 1000, POLL_S))


def _notify(hub: Hub, before: list[str], still: list[str]) -> None:
    """The in-process stop hint for each task that ended since ``before`` was read (lease loss is the rule)."""
    left = set(still)
    for task_id in before:
        if task_id not in left:
            hub.notify_cancelled(task_id)


async def pause_task(hub: Hub, p: Principal, req: PauseTaskRequest) -> TaskResponse:
    if not req.tree:
        return await t.pause_task(hub, p, req)
    await t._task_namespace(hub, p, req.id, req.namespace)
    await hub.store.write(lambda tx: trees.pause_tree(tx, req.id, req.hold_until_ms, req.reason))
    return TaskResponse(task=await t.load_task(hub, p, req.id))


async def resume_task(hub: Hub, p: Principal, req: ResumeTaskRequest) -> TaskResponse:
    if not req.tree:
        return await t.resume_task(hub, p, req)
    await t._task_namespace(hub, p, req.id, req.namespace)
    await hub.store.write(lambda tx: trees.resume_tree(tx, req.id))
    hub.desired_state_changed()
    return TaskResponse(task=await t.load_task(hub, p, req.id))
