"""Child tasks: submission with lineage, limits, combined overrides and the tree budget (seed 000
§5 "Task overrides", "Tree budgets", "Delegation lineage"; §6 "Delegation").

Everything about a child is derived here from its parent task, never taken from the caller:
root task, depth, root and parent run, labels, namespace, the caller's limits. The child goes
through the same admission and queue insert as SubmitTask; its idempotency key is the call key,
so the same call submitted again (a retry, a resume, a restart after SIGKILL) returns the same
child. limits.maxTotalDelegations counts rows of ``delegation_calls`` (one per call key per root
run) in the submitting transaction, so the counter is atomic and counts a call once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from agen.bundle.config import (
    DEFAULT_MAX_DELEGATION_DEPTH,
    DEFAULT_MAX_FAN_OUT,
    DEFAULT_MAX_TOTAL_DELEGATIONS,
)
from agen.bundle.overrides import TRUST_RANK, TaskOverrides
from agen.domain import (
    DeploymentRef,
    DeploymentRow,
    RunRef,
    TaskRow,
    TaskState,
    columns,
)
from agen.errors import ConflictError, DeniedError, InvalidError, NotFoundError, RateLimitedError
from agen.hub.queue import admission
from agen.hub.queue.submit import NewTask, loads_labels, submit_task
from agen.hub.queue.tasks import LIVE, UNFINISHED, get_task
from agen.store import Tx, loads
from agen.store.pg_locks import lock_keys
from agen.store.records import Amount, Count

if TYPE_CHECKING:
    from agen.wire.delegation import SubmitChildTaskRequest

A2A_KEY_PREFIX = "a2a:"  # an A2A call_agent's key in delegation_calls: a2a:<run>.<step>.<call>
TOKEN_FLOOR = 1  # a spent tree still lets a child's first turn run (0 would read as "no limit")
USD_FLOOR = 0.0001


def _limits(tx: Tx, deployment_id: str) -> dict[str, Any]:
    return dict(
        loads(tx.scalar("SELECT limits FROM deployments WHERE id = ?", (deployment_id,)), {}) or {}
    )


def _limit(limits: dict[str, Any], camel: str, snake: str, default: int) -> int:
    value = limits.get(camel, limits.get(snake))
    return default if value is None else int(value)


def _intersect(a: list[str] | None, b: list[str] | None) -> list[str] | None:
    if a is None:
        return b
    if b is None:
        return a
    return [x for x in b if x in a]


def _smaller(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def combine_overrides(
    parent: dict[str, Any] | None, child: dict[str, Any] | None
) -> dict[str, Any] | None:
    """A child's effective overrides: its parent's combined with its own (allowlists intersect,
    permissions concatenate, the system addendum appends, budgets take the smaller), so a
    descendant never regains what an ancestor gave up."""
    if not parent:
        return child or None
    if not child:
        return parent
    p, c = TaskOverrides.model_validate(parent), TaskOverrides.model_validate(child)
    pd, cd = p.max_run_duration_ms, c.max_run_duration_ms
    duration = (
        p.budget.max_run_duration
        if cd is None or (pd is not None and pd <= cd)
        else c.budget.max_run_duration
    )
    addendum = "\n\n".join(a for a in (p.system_addendum, c.system_addendum) if a) or None
    out = TaskOverrides.model_validate(
        {
            "tools": _intersect(p.tools, c.tools),
            "skills": _intersect(p.skills, c.skills),
            "systemAddendum": addendum,
            "permissions": {
                "deny": [*p.permissions.deny, *c.permissions.deny],
                "ask": [*p.permissions.ask, *c.permissions.ask],
            },
            "budget": {
                "maxTurns": _smaller(p.max_turns, c.max_turns),
                "maxRunDuration": duration,
                "maxTokensPerRun": _smaller(p.max_tokens_per_run, c.max_tokens_per_run),
                "maxUsdPerRun": _smaller(p.max_usd_per_run, c.max_usd_per_run),
            },
        }
    )
    return out.stored()


def _tree_limits(tx: Tx, root_task_id: str) -> tuple[int | None, float | None]:
    """The tree's budget: the root task's own overrides.budget (tokens, USD)."""
    raw = loads(tx.scalar("SELECT overrides FROM tasks WHERE id = ?", (root_task_id,)))
    if not raw:
        return None, None
    ov = TaskOverrides.model_validate(raw)
    return ov.max_tokens_per_run, ov.max_usd_per_run


def tree_usage(tx: Tx, root_task_id: str) -> tuple[int, float]:
    """Tokens and USD every run of every task of the tree used so far."""
    row = tx.row(
        _TreeUsage,
        "SELECT COALESCE(SUM(r.input_tokens + r.output_tokens), 0) AS tokens,"
        " COALESCE(SUM(r.cost_usd), 0) AS usd FROM runs r JOIN tasks t ON r.task_id = t.id"
        " WHERE t.root_task_id = ?",
        (root_task_id,),
    )
    assert row is not None
    return row.tokens, row.usd


class _TreeUsage(NamedTuple):
    """What runs used (a SUM: ``numeric`` on Postgres)."""

    tokens: Count
    usd: Amount


class _TaskUsage(NamedTuple):
    """What one task's runs used."""

    task_id: str
    tokens: Count
    usd: Amount


class _TreeTask(NamedTuple):
    """A task of a tree as the budget ledger reads it."""

    id: str
    parent_task_id: str | None
    state: TaskState
    overrides: str | None  # JSON text


def tree_budget_exceeded(tx: Tx, root_task_id: str) -> bool:
    tokens, usd = _tree_limits(tx, root_task_id)
    if tokens is None and usd is None:
        return False
    used_tokens, used_usd = tree_usage(tx, root_task_id)
    return (tokens is not None and used_tokens >= tokens) or (usd is not None and used_usd >= usd)


@dataclass(frozen=True, slots=True)
class _Share:
    """Tokens and USD: a budget, a use, or what is left of one (None: no limit)."""

    tokens: float | None
    usd: float | None


@dataclass(frozen=True, slots=True)
class _TreeNode:
    """One task of a tree as the budget ledger sees it."""

    parent: str | None
    finished: bool
    reserved: _Share  # its own overrides.budget: what its submission reserved of the tree
    tokens: int  # what its runs used
    usd: float


def _tree_nodes(tx: Tx, root_task_id: str) -> dict[str, _TreeNode]:
    """Every task of the tree with its reservation and its runs' usage (two reads)."""
    used = {
        r.task_id: (r.tokens, r.usd)
        for r in tx.rows(
            _TaskUsage,
            "SELECT r.task_id, COALESCE(SUM(r.input_tokens + r.output_tokens), 0) AS tokens,"
            " COALESCE(SUM(r.cost_usd), 0) AS usd FROM runs r JOIN tasks t ON r.task_id = t.id"
            " WHERE t.root_task_id = ? GROUP BY r.task_id",
            (root_task_id,),
        )
    }
    nodes: dict[str, _TreeNode] = {}
    for row in tx.rows(
        _TreeTask,
        f"SELECT {columns(_TreeTask)} FROM tasks WHERE root_task_id = ?",
        (root_task_id,),
    ):
        raw = loads(row.overrides)
        ov = TaskOverrides.model_validate(raw) if raw else None
        tokens, usd = used.get(row.id, (0, 0.0))
        nodes[row.id] = _TreeNode(
            parent=row.parent_task_id,
            finished=row.state not in UNFINISHED,
            reserved=_Share(
                ov.max_tokens_per_run if ov else None, ov.max_usd_per_run if ov else None
            ),
            tokens=tokens,
            usd=usd,
        )
    return nodes


def _subtree_use(nodes: dict[str, _TreeNode], task_id: str) -> _Share:
    kids: dict[str, list[str]] = {}
    for tid, n in nodes.items():
        if n.parent is not None:
            kids.setdefault(n.parent, []).append(tid)
    tokens, usd, todo = 0.0, 0.0, [task_id]
    while todo:
        tid = todo.pop()
        tokens += nodes[tid].tokens
        usd += nodes[tid].usd
        todo.extend(kids.get(tid, []))
    return _Share(tokens, usd)


def _room(nodes: dict[str, _TreeNode], level: str, budget: _Share, skip: str | None) -> _Share:
    """What is left of ``level``'s budget: minus what its subtree used, minus what its unfinished
    children (but ``skip``, the branch the new child goes under) reserved and have not used yet."""
    use = _subtree_use(nodes, level)
    tokens = None if budget.tokens is None else budget.tokens - (use.tokens or 0)
    usd = None if budget.usd is None else budget.usd - (use.usd or 0)
    for tid, n in nodes.items():
        if n.parent != level or n.finished or tid == skip:
            continue
        spent = _subtree_use(nodes, tid)
        if tokens is not None and n.reserved.tokens is not None:
            tokens -= max(0.0, n.reserved.tokens - (spent.tokens or 0))
        if usd is not None and n.reserved.usd is not None:
            usd -= max(0.0, n.reserved.usd - (spent.usd or 0))
    return _Share(tokens, usd)


def _turn_prefix(call_key: str) -> str | None:
    """``<run>.<turn>.`` of a ``call:``/``start:`` key: the calls of one turn share it."""
    _, _, rest = call_key.partition(":")
    head, dot, _ = rest.rpartition(".")
    return f"{head}." if dot and head else None


def _siblings_started(tx: Tx, parent_id: str, call_key: str) -> int:
    prefix = _turn_prefix(call_key)
    if prefix is None:
        return 0
    return int(
        tx.scalar(
            "SELECT COUNT(*) FROM tasks WHERE parent_task_id = ?"
            " AND (idempotency_key LIKE ? OR idempotency_key LIKE ?)",
            (parent_id, f"call:{prefix}%", f"start:{prefix}%"),
        )
        or 0
    )


def _narrow_for_tree(
    tx: Tx, parent: TaskRow, call_key: str, siblings: int, overrides: dict[str, Any] | None
) -> Any:
    """The child's budget narrowed to its share of what is left of the tree's, reserved at its
    submission (seed 000 §5 "Tree budgets"). What is left counts what every run used and what
    the unfinished children reserved and have not used yet (a ledger kept in their own
    overrides.budget, settled when they end), at every level from the root down to the parent;
    the children one turn starts together split it, so starting N of them at once never hands
    each the whole remainder."""
    tokens, usd = _tree_limits(tx, parent.root_task_id)
    if tokens is None and usd is None:
        return overrides
    nodes = _tree_nodes(tx, parent.root_task_id)
    chain: list[str] = []
    tid: str | None = parent.id
    while tid is not None and tid in nodes and len(chain) < 64:
        chain.append(tid)
        tid = nodes[tid].parent
    levels = chain[::-1]  # the root first, down to the parent
    left_tokens: float | None = None
    left_usd: float | None = None
    for i, level in enumerate(levels):
        own = _Share(tokens, usd) if i == 0 else nodes[level].reserved
        below = levels[i + 1] if i + 1 < len(levels) else None
        room = _room(nodes, level, own, below)
        if room.tokens is not None:
            left_tokens = room.tokens if left_tokens is None else min(left_tokens, room.tokens)
        if room.usd is not None:
            left_usd = room.usd if left_usd is None else min(left_usd, room.usd)
    share = max(1, siblings - _siblings_started(tx, parent.id, call_key))
    budget: dict[str, Any] = {}
    if tokens is not None and left_tokens is not None:
        budget["maxTokensPerRun"] = max(TOKEN_FLOOR, int(left_tokens // share))
    if usd is not None and left_usd is not None:
        budget["maxUsdPerRun"] = max(USD_FLOOR, round(left_usd / share, 6))
    return combine_overrides(overrides, {"budget": budget})


def _check_trust(asked: str, parent: str) -> str:
    if asked not in TRUST_RANK:
        raise InvalidError(f"trust {asked!r} is not one of {', '.join(TRUST_RANK)}", field="trust")
    return asked if TRUST_RANK[asked] <= TRUST_RANK.get(parent, 1) else parent


def submit_child(
    tx: Tx, req: SubmitChildTaskRequest, submitted_by: str | None
) -> tuple[TaskRow, bool]:
    """Store the child task (or return the one this call key already started)."""
    parent = get_task(tx, req.parent_task_id)
    if req.namespace != parent.namespace:
        raise DeniedError(
            f"delegation stays within namespace {parent.namespace}; {req.namespace}/"
            f"{req.deployment} is outside it",
            namespace=req.namespace,
        )
    dep = tx.row(
        DeploymentRow,
        "SELECT * FROM deployments WHERE namespace = ? AND name = ?",
        (req.namespace, req.deployment),
    )
    if dep is None:
        raise NotFoundError(
            f"agent {req.namespace}/{req.deployment} is not deployed; deploy it (agen deploy) "
            "or delegate to another agent",
            deployment=req.deployment,
        )
    existing = tx.row(
        TaskRow,
        "SELECT * FROM tasks WHERE namespace = ? AND deployment_id = ? AND idempotency_key = ?",
        (req.namespace, dep.id, req.call_key),
    )
    if existing is not None:
        return existing, False
    if parent.state not in LIVE:
        raise ConflictError(
            f"task {parent.id} is {parent.state}; only a running task can delegate",
            task_id=parent.id,
        )
    limits = _limits(tx, parent.deployment_id)
    depth = parent.depth + 1
    max_depth = _limit(
        limits, "maxDelegationDepth", "max_delegation_depth", DEFAULT_MAX_DELEGATION_DEPTH
    )
    if depth > max_depth:
        raise DeniedError(
            f"delegation depth {depth} is past limits.maxDelegationDepth {max_depth} of "
            f"{parent.deployment}; do this part yourself instead of delegating it",
            limit="maxDelegationDepth",
        )
    run = tx.row(RunRef, f"SELECT {columns(RunRef)} FROM runs WHERE task_id = ?", (parent.id,))
    _check_fan_out(tx, parent, run.id if run else None, run.root_run_id if run else None, limits)
    if run is None:
        raise ConflictError(
            f"task {parent.id} has no run yet; delegate from inside its run",
            task_id=parent.id,
        )
    _count_delegation(tx, run.root_run_id, req.call_key, limits, parent.deployment)
    overrides = req.overrides
    if overrides is not None:
        try:
            overrides = TaskOverrides.model_validate(overrides).stored()
        except ValueError as e:
            raise InvalidError(f"overrides: {e}", field="overrides") from None
    overrides = combine_overrides(loads(parent.overrides), overrides)
    overrides = _narrow_for_tree(tx, parent, req.call_key, req.siblings, overrides)
    new = NewTask(
        namespace=req.namespace,
        deployment_id=dep.id,
        deployment=dep.name,
        input=req.input,
        source="child",
        labels={},  # the parent's labels are carried down by the queue
        idempotency_key=req.call_key,
        trust=_check_trust(req.trust, parent.trust),
        overrides=overrides,
        parent_task_id=parent.id,
        submitted_by=submitted_by,
        reply_deployment=parent.deployment if req.reply_conversation_key else None,
        reply_conversation_key=req.reply_conversation_key,
        traceparent=req.traceparent,
    )
    admission.admit(tx, dep, tx.now_ms)
    row, created = submit_task(tx, new)
    tx.execute(
        "UPDATE tasks SET parent_run_id = ?, root_run_id = ? WHERE id = ?",
        (run.id, run.root_run_id, row.id),
    )
    tx.execute(
        "UPDATE delegation_calls SET task_id = ? WHERE root_run_id = ? AND call_key = ?",
        (row.id, run.root_run_id, req.call_key),
    )
    return row._replace(parent_run_id=run.id, root_run_id=run.root_run_id), created


@dataclass(frozen=True, slots=True)
class Lineage:
    parent_run_id: str
    root_run_id: str
    depth: int
    parent_task_id: str | None = None  # the calling run's task: the callee joins its tree


def a2a_lineage(tx: Tx, caller_ns: str, caller_dep: str, parent_run_id: str) -> Lineage:
    """The lineage of a task an agent starts over A2A (seed 000 §10): its ``agen.parent_run_id``
    must be a run of the calling deployment (named by the caller's call token, which the Hub signed);
    root and depth come from that run's chain, never from the claim, and the depth is checked
    against the caller's limits.maxDelegationDepth. The callee becomes a child of that run's task,
    in its tree, as a call_agent child is (``agen tree`` shows it)."""
    run = tx.row(
        _CallerRun, f"SELECT {columns(_CallerRun)} FROM runs WHERE id = ?", (parent_run_id,)
    )
    if run is None or (run.namespace, run.deployment) != (caller_ns, caller_dep):
        raise DeniedError(
            f"agen.parent_run_id {parent_run_id} is not a run of the calling deployment "
            f"{caller_ns}/{caller_dep}; an agent attaches calls only to its own runs",
            parent_run_id=parent_run_id,
        )
    depth = tx.scalar("SELECT depth FROM tasks WHERE id = ?", (run.task_id,))
    if depth is None:  # a run without a task: count the runs above it
        depth, above = 0, run.parent_run_id
        while above is not None and depth < 64:
            depth += 1
            above = tx.scalar("SELECT parent_run_id FROM runs WHERE id = ?", (above,))
    depth = int(depth) + 1
    dep_id = tx.scalar(
        "SELECT id FROM deployments WHERE namespace = ? AND name = ?", (caller_ns, caller_dep)
    )
    limits = _limits(tx, dep_id) if dep_id is not None else {}
    max_depth = _limit(
        limits, "maxDelegationDepth", "max_delegation_depth", DEFAULT_MAX_DELEGATION_DEPTH
    )
    if depth > max_depth:
        raise DeniedError(
            f"delegation depth {depth} is past limits.maxDelegationDepth {max_depth} of "
            f"{caller_dep}; do this part yourself instead of delegating it",
            limit="maxDelegationDepth",
        )
    return Lineage(run.id, run.root_run_id or run.id, depth, run.task_id or None)


class _CallerRun(NamedTuple):
    """The run an A2A call names as its parent: whose it is and where it sits in its tree."""

    id: str
    namespace: str
    deployment: str
    task_id: str | None
    root_run_id: str
    parent_run_id: str | None


def count_a2a_call(tx: Tx, task_id: str, call_key: str) -> None:
    """An A2A call_agent is a child for the delegation limits (seed 000 §6): it counts towards the
    run's limits.maxFanOut beside its child tasks, and once (by its call key) towards the tree's
    limits.maxTotalDelegations. Over a limit it is refused like a child task."""
    parent = get_task(tx, task_id)
    run = tx.row(RunRef, f"SELECT {columns(RunRef)} FROM runs WHERE task_id = ?", (task_id,))
    if run is None:
        raise ConflictError(
            f"task {task_id} has no run yet; delegate from inside its run", task_id=task_id
        )
    root = run.root_run_id or run.id
    if tx.scalar(
        "SELECT 1 FROM delegation_calls WHERE root_run_id = ? AND call_key = ?", (root, call_key)
    ):
        return  # a retry or resume of a call already counted
    limits = _limits(tx, parent.deployment_id)
    _check_fan_out(tx, parent, run.id, root, limits)
    _count_delegation(tx, root, call_key, limits, parent.deployment)


def _a2a_calls(tx: Tx, run_id: str, root_run_id: str) -> int:
    """A run's A2A calls so far (their keys are ``a2a:<run>.<step>.<call>``)."""
    return int(
        tx.scalar(
            "SELECT COUNT(*) FROM delegation_calls WHERE root_run_id = ? AND call_key LIKE ?",
            (root_run_id, f"{A2A_KEY_PREFIX}{run_id}.%"),
        )
        or 0
    )


def _check_fan_out(
    tx: Tx, parent: TaskRow, run_id: str | None, root_run_id: str | None, limits: dict[str, Any]
) -> None:
    fan_out = _limit(limits, "maxFanOut", "max_fan_out", DEFAULT_MAX_FAN_OUT)
    started = int(  # an A2A callee (key a2a:…) is counted once, by its call below
        tx.scalar(
            "SELECT COUNT(*) FROM tasks WHERE parent_task_id = ?"
            " AND (idempotency_key IS NULL OR idempotency_key NOT LIKE 'a2a:%')",
            (parent.id,),
        )
        or 0
    )
    if run_id is not None and root_run_id is not None:
        started += _a2a_calls(tx, run_id, root_run_id)
    if started >= fan_out:
        raise DeniedError(
            f"this run already started {started} child tasks and A2A calls, limits.maxFanOut "
            f"{fan_out} of {parent.deployment}; wait for their results and work with those",
            limit="maxFanOut",
        )


def _count_delegation(
    tx: Tx, root_run_id: str, key: str, limits: dict[str, Any], deployment: str
) -> None:
    """limits.maxTotalDelegations per tree, counted once per call key (the tree's count is read and then
    raised: one delegation of a tree at a time decides it, agen.store.pg_locks)."""
    lock_keys(tx, f"delegations:{root_run_id}")
    if tx.scalar(
        "SELECT 1 FROM delegation_calls WHERE root_run_id = ? AND call_key = ?", (root_run_id, key)
    ):
        return
    cap = _limit(
        limits, "maxTotalDelegations", "max_total_delegations", DEFAULT_MAX_TOTAL_DELEGATIONS
    )
    used = int(
        tx.scalar("SELECT COUNT(*) FROM delegation_calls WHERE root_run_id = ?", (root_run_id,))
        or 0
    )
    if used >= cap:
        raise RateLimitedError(
            f"this task tree already made {used} delegations, limits.maxTotalDelegations {cap} of "
            f"{deployment}; finish with what the tree has found",
            limit="maxTotalDelegations",
        )
    tx.execute(
        "INSERT INTO delegation_calls (root_run_id, call_key, created_ms) VALUES (?, ?, ?)",
        (root_run_id, key, tx.now_ms),
    )


def is_descendant(tx: Tx, ancestor_id: str, task_id: str, *, max_hops: int = 64) -> bool:
    """Does ``task_id``'s parent chain reach ``ancestor_id`` (bounded walk)?"""
    current: str | None = task_id
    for _ in range(max_hops):
        parent = tx.scalar("SELECT parent_task_id FROM tasks WHERE id = ?", (current,))
        if parent is None:
            return False
        if parent == ancestor_id:
            return True
        current = parent
    return False


def require_descendant(tx: Tx, task_id: str, target: str) -> TaskRow:
    """The target task, when it descends from ``task_id``; refused otherwise (without saying
    whether a task outside the caller's tree exists)."""
    if not is_descendant(tx, task_id, target):
        raise DeniedError(
            f"task {target} is not one you delegated (directly or further down); "
            "query_agent and signal_agent reach only your own descendants",
            task_id=target,
        )
    return get_task(tx, target)


def unfinished_children(tx: Tx, task_id: str) -> int:
    marks = ",".join("?" * len(UNFINISHED))
    return int(
        tx.scalar(
            "SELECT COUNT(*) FROM tasks WHERE parent_task_id = ? AND reply_deployment IS NULL"
            f" AND state IN ({marks})",
            (task_id, *UNFINISHED),
        )
        or 0
    )


class ChildEnd(NamedTuple):
    """A joined child's end waiting in its parent's inbox: the inbox row to acknowledge and the
    child's columns its caller reads."""

    inbox_id: str
    id: str
    deployment: str
    state: TaskState
    outcome: str | None  # JSON text, as stored
    error: str | None


def joined_results(tx: Tx, task_id: str) -> list[ChildEnd]:
    """Undelivered ends of the task's joined start_agent children (call_agent reads its child's
    state itself), oldest first."""
    return tx.rows(
        ChildEnd,
        "SELECT i.id AS inbox_id, t.id, t.deployment, t.state, t.outcome, t.error FROM run_inbox i"
        " JOIN tasks t ON t.id = i.ref WHERE i.task_id = ? AND i.kind = 'child'"
        " AND i.consumed_ms IS NULL AND t.reply_deployment IS NULL AND t.parent_task_id = ?"
        " AND t.idempotency_key LIKE 'start:%' ORDER BY i.created_ms, i.id",
        (task_id, task_id),
    )


def ack_inbox(tx: Tx, task_id: str, inbox_ids: list[str]) -> int:
    if not inbox_ids:
        return 0
    marks = ",".join("?" * len(inbox_ids))
    return tx.execute(
        f"UPDATE run_inbox SET consumed_ms = ? WHERE task_id = ? AND id IN ({marks})"
        " AND consumed_ms IS NULL",
        (tx.now_ms, task_id, *inbox_ids),
    )


def reply_to_caller(tx: Tx, row: TaskRow, state: str, outcome: dict[str, Any] | None) -> None:
    """A detached child ended: its result goes once (``reply:<child>``) to the caller's deployment,
    in the caller's conversation, as a new task with the child's labels."""
    dep = tx.row(
        DeploymentRef,
        f"SELECT {columns(DeploymentRef)} FROM deployments WHERE namespace = ? AND name = ?",
        (row.namespace, row.reply_deployment),
    )
    if dep is None:  # the caller was deleted meanwhile: nobody to reply to
        return
    from agen.domain.delegation import ChildState, result_note

    child = ChildState(
        id=row.id,
        deployment=row.deployment,
        state=state,
        outcome=outcome,
        error=row.error,
    )
    submit_task(
        tx,
        NewTask(
            namespace=row.namespace,
            deployment_id=dep.id,
            deployment=dep.name,
            input=result_note(child),
            source=f"reply:{row.deployment}",
            conversation_key=row.reply_conversation_key,
            labels=loads_labels(row.labels),
            idempotency_key=f"reply:{row.id}",
            trust=row.trust,
        ),
    )
