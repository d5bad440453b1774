"""GetActivity: every unfinished run with what it does now, the queues, and the warnings.

What a run does now is read from the durable record, never from memory: a pending
approval (approval), its task suspended on a child (agent), its task given back or held
(idle), else its newest messages: an assistant turn whose tool calls have not all got a
result is running a tool, anything else is waiting on the model. Thresholds follow seed
000 §11.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

from agen.domain import (
    DeploymentBudget,
    DeploymentLimits,
    RunRow,
    TaskState,
    TaskStatus,
    columns,
)
from agen.hub.observe.activity import run_activity
from agen.hub.service import Hub
from agen.store import loads
from agen.store.records import Amount, Count
from agen.wire.observe import (
    ActivityWarning,
    GetActivityResponse,
    Queue,
    RunActivity,
    Usage,
)

MIN = 60_000
NEAR = 0.8  # near_turn_limit, near_run_budget, near_daily_budget
QUIET_MS = 5 * MIN  # quiet_run: no step for 5 min
APPROVAL_WAIT_MS = 30 * MIN  # waiting_approval
QUEUE_WAIT_MS = 5 * MIN  # queue_waiting
BURST_TASKS, BURST_MS = 10, 10 * MIN
MODEL_ERR_SHARE, MODEL_ERR_MIN, MODEL_ERR_MS = 0.3, 5, 15 * MIN
DAY_MS = 86_400_000
MAX_RUNS = 1000
TAIL = 16  # newest messages per run read to tell model from tool


def _marks(items: Iterable[Any]) -> str:
    return ",".join("?" * len(list(items)))


def ns_sql(column: str, namespaces: list[str]) -> str:
    """``column IN ('a', 'b')``, or always true when the caller sees every namespace (empty list)."""
    if not namespaces:
        return "1 = 1"
    return f"{column} IN ({', '.join(chr(39) + n.replace(chr(39), chr(39) * 2) + chr(39) for n in namespaces)})"


class _PendingApproval(NamedTuple):
    id: str
    run_id: str
    tool: str
    created_ms: int


class _TailMessage(NamedTuple):
    """One of a run's newest messages, as far as telling model from tool needs."""

    run_id: str
    seq: int
    role: str
    tool_calls: str | None  # JSON text
    created_ms: int


def _doing(
    run: RunRow,
    task: TaskStatus | None,
    approval: _PendingApproval | None,
    tail: list[_TailMessage],
) -> tuple[str, str | None, int]:
    """(doing, detail, since_ms) for one unfinished run."""
    if approval is not None:
        return "approval", f"{approval.tool} ({approval.id})", approval.created_ms
    if task is not None and task.state == TaskState.WAITING:
        return "agent", task.wait_for, task.updated_ms
    if task is not None and (task.held or task.state == TaskState.QUEUED):
        return "idle", "held" if task.held else "queued", task.updated_ms
    results = 0
    for m in tail:  # newest first
        if m.role == "tool":
            results += 1
            continue
        if m.role == "assistant":
            calls = loads(m.tool_calls, []) or []
            if len(calls) > results:
                pending = [str(c.get("name")) for c in calls[results:]]
                return "tool", ", ".join(pending), tail[0].created_ms
        return "model", run.model, m.created_ms
    return "model", run.model, run.started_ms


def _limits(dep: DeploymentLimits | None) -> dict[str, Any]:
    raw = loads(dep.limits, {}) if dep else {}
    return raw if isinstance(raw, dict) else {}


def _get(cfg: dict[str, Any], snake: str, camel: str) -> Any:
    return cfg.get(snake, cfg.get(camel))


def run_usage(row: RunRow) -> Usage:
    return Usage(
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cached_tokens=row.cached_tokens,
        cost_usd=row.cost_usd,
    )


async def tasks_by_id(hub: Hub, ids: list[str]) -> dict[str, TaskStatus]:
    ids = [i for i in ids if i]
    if not ids:
        return {}
    rows = await hub.store.rows(
        TaskStatus,
        f"SELECT {columns(TaskStatus)} FROM tasks WHERE id IN ({','.join('?' * len(ids))})",
        ids,
    )
    return {t.id: t for t in rows}


async def activities(hub: Hub, runs: list[RunRow]) -> list[RunActivity]:
    """RunActivity for unfinished runs, in a fixed number of grouped reads."""
    if not runs:
        return []
    ids = [r.id for r in runs]
    tasks = await tasks_by_id(hub, [r.task_id for r in runs if r.task_id])
    approvals = {
        a.run_id: a
        for a in await hub.store.rows(
            _PendingApproval,
            f"SELECT {columns(_PendingApproval)} FROM approvals WHERE run_id IN ({_marks(ids)}) AND state = 'pending'"
            " ORDER BY created_ms DESC",
            ids,
        )
    }
    tails: dict[str, list[_TailMessage]] = defaultdict(list)
    for m in await hub.store.rows(
        _TailMessage,
        f"SELECT * FROM (SELECT {columns(_TailMessage)},"
        " ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY seq DESC) AS rn FROM messages"
        f" WHERE run_id IN ({_marks(ids)})) AS tail WHERE rn <= {TAIL} ORDER BY run_id, seq DESC",
        ids,
    ):
        tails[m.run_id].append(m)
    names = sorted({(r.namespace, r.deployment) for r in runs})
    deps = {
        (d.namespace, d.name): d
        for d in await hub.store.rows(
            DeploymentLimits,
            f"SELECT {columns(DeploymentLimits)} FROM deployments WHERE name IN ({_marks(names)})",
            [n for _, n in names],
        )
    }
    out: list[RunActivity] = []
    for r in runs:
        task = tasks.get(r.task_id or "")
        act = run_activity(
            r.status,
            finished=False,
            task_state=task.state if task else None,
            held=bool(task and task.held),
        )
        doing, detail, since = _doing(r, task, approvals.get(r.id), tails.get(r.id, []))
        limits = _limits(deps.get((r.namespace, r.deployment)))
        out.append(
            RunActivity(
                run_id=r.id,
                namespace=r.namespace,
                deployment=r.deployment,
                task_id=r.task_id,
                status=r.status,
                activity=act.word,
                stopped_reason=act.stopped_reason,
                needs=act.needs,
                doing=doing,
                detail=detail,
                since_ms=since,
                turns=r.turns,
                max_turns=_get(limits, "max_turns", "maxTurns"),
                usage=run_usage(r),
                max_usd_per_run=_get(limits, "max_usd_per_run", "maxUsdPerRun"),
                caller=r.requested_by or (f"run:{r.parent_run_id}" if r.parent_run_id else None),
                source=r.source,
                labels=loads(r.labels, {}),
                started_ms=r.started_ms,
            )
        )
    return out


def _run_warnings(
    acts: list[RunActivity], runs: dict[str, RunRow], now: int
) -> list[ActivityWarning]:
    out: list[ActivityWarning] = []
    for a in acts:
        base = {
            "namespace": a.namespace,
            "deployment": a.deployment,
            "run_id": a.run_id,
            "task_id": a.task_id,
        }
        if a.max_turns and a.turns >= NEAR * a.max_turns:
            out.append(
                ActivityWarning(
                    kind="near_turn_limit",
                    severity="warning",
                    **base,
                    message=f"{a.turns} of {a.max_turns} turns used",
                    data={"turns": a.turns, "max_turns": a.max_turns},
                )
            )
        if a.max_usd_per_run and a.usage.cost_usd >= NEAR * a.max_usd_per_run:
            out.append(
                ActivityWarning(
                    kind="near_run_budget",
                    severity="warning",
                    **base,
                    message=f"${a.usage.cost_usd:.4f} of ${a.max_usd_per_run:.2f} per run spent",
                    data={"cost_usd": a.usage.cost_usd, "max_usd_per_run": a.max_usd_per_run},
                )
            )
        last_step = runs[a.run_id].updated_ms
        if a.doing in ("model", "tool") and now - last_step >= QUIET_MS:
            out.append(
                ActivityWarning(
                    kind="quiet_run",
                    severity="warning",
                    **base,
                    since_ms=last_step,
                    message=f"no step for {(now - last_step) // MIN} min ({a.doing})",
                )
            )
        if a.doing == "approval" and now - a.since_ms >= APPROVAL_WAIT_MS:
            out.append(
                ActivityWarning(
                    kind="waiting_approval",
                    severity="warning",
                    **base,
                    since_ms=a.since_ms,
                    message=f"waiting {(now - a.since_ms) // MIN} min for approval {a.detail}",
                )
            )
    return out


async def _queues(hub: Hub, namespaces: list[str], deployment: str | None, now: int) -> list[Queue]:
    sql = (
        "SELECT namespace, deployment, "
        " SUM(CASE WHEN state = 'queued' AND held = 0 AND COALESCE(not_before_ms, 0) <= :now THEN 1 ELSE 0 END) AS due,"
        " SUM(CASE WHEN state = 'queued' AND not_before_ms > :now THEN 1 ELSE 0 END) AS scheduled,"
        " SUM(CASE WHEN state IN ('leased', 'running') THEN 1 ELSE 0 END) AS running,"
        " SUM(CASE WHEN state = 'waiting' THEN 1 ELSE 0 END) AS waiting,"
        " MIN(CASE WHEN state = 'queued' AND held = 0 AND COALESCE(not_before_ms, 0) <= :now"
        "     THEN MAX(created_ms, COALESCE(not_before_ms, 0)) END) AS oldest"
        " FROM tasks WHERE state IN ('queued', 'leased', 'running', 'waiting')"
        f" AND {ns_sql('namespace', namespaces)}"
    )
    params: dict[str, Any] = {"now": now}
    if deployment:
        sql += " AND deployment = :dep"
        params["dep"] = deployment
    rows = await hub.store.rows(
        _QueueLine, sql + " GROUP BY namespace, deployment ORDER BY namespace, deployment", params
    )
    return [
        Queue(
            namespace=r.namespace,
            deployment=r.deployment,
            due=r.due,
            scheduled=r.scheduled,
            running=r.running,
            waiting=r.waiting,
            oldest_wait_ms=None if r.oldest is None else now - r.oldest,
        )
        for r in rows
    ]


class _QueueLine(NamedTuple):
    """One deployment's unfinished tasks (SUMs: NULL on no rows, ``numeric`` on Postgres)."""

    namespace: str
    deployment: str
    due: Count
    scheduled: Count
    running: Count
    waiting: Count
    oldest: int | None  # when the oldest due task became due


def _queue_warnings(queues: list[Queue], acts: list[RunActivity]) -> list[ActivityWarning]:
    out: list[ActivityWarning] = []
    by_dep: dict[tuple[str, str], list[RunActivity]] = defaultdict(list)
    for a in acts:
        by_dep[(a.namespace, a.deployment)].append(a)
    for q in queues:
        if q.oldest_wait_ms is not None and q.oldest_wait_ms >= QUEUE_WAIT_MS:
            out.append(
                ActivityWarning(
                    kind="queue_waiting",
                    severity="warning",
                    namespace=q.namespace,
                    deployment=q.deployment,
                    message=f"{q.due} due tasks; the oldest has waited "
                    f"{q.oldest_wait_ms // MIN} min",
                    data={"due": q.due},
                )
            )
        running = by_dep.get((q.namespace, q.deployment), [])
        if q.due and running and all(a.doing == "approval" for a in running):
            out.append(
                ActivityWarning(
                    kind="blocked_by_approval",
                    severity="critical",
                    namespace=q.namespace,
                    deployment=q.deployment,
                    message=f"{q.due} queued tasks wait while every run "
                    "waits for an approval; `agen approvals` lists them",
                    data={"due": q.due},
                )
            )
    return out


async def _store_warnings(
    hub: Hub, namespaces: list[str], deployment: str | None, runs: list[RunRow], now: int
) -> list[ActivityWarning]:
    """Warnings read from their own tables: budgets, bursts, model errors, holds, triggers."""
    from agen.hub.observe.activity import _limit
    from agen.hub.queue.budgets import utc_day

    out: list[ActivityWarning] = []
    ns = ns_sql("namespace", namespaces)
    dns = ns_sql("d.namespace", namespaces)
    dep_sql = " AND deployment = ?" if deployment else ""
    dep_p: list[Any] = [deployment] if deployment else []
    spent = {
        (r.namespace, r.deployment): r.usd
        for r in await hub.store.rows(
            _Spent,
            f"SELECT namespace, deployment, SUM(cost_usd) AS usd FROM usage WHERE {ns} AND day = ?"
            f"{dep_sql} GROUP BY namespace, deployment",
            [utc_day(now), *dep_p],
        )
    }
    if spent:
        for d in await hub.store.rows(
            DeploymentBudget, f"SELECT {columns(DeploymentBudget)} FROM deployments WHERE {ns}"
        ):
            limit, used = _limit(d.budget), spent.get((d.namespace, d.name), 0.0)
            if limit and used >= NEAR * limit:
                out.append(
                    ActivityWarning(
                        kind="near_daily_budget",
                        severity="critical" if used >= limit else "warning",
                        namespace=d.namespace,
                        deployment=d.name,
                        data={"spent_usd": used, "limit_usd": limit},
                        message=f"${used:.4f} of ${limit:.2f} spent today (UTC)",
                    )
                )
    for b in await hub.store.rows(
        _Burst,
        f"SELECT namespace, deployment, conversation_key, COUNT(*) AS n FROM tasks WHERE {ns}"
        f" AND created_ms >= ? AND conversation_key IS NOT NULL{dep_sql}"
        f" GROUP BY namespace, deployment, conversation_key HAVING COUNT(*) >= {BURST_TASKS}",
        [now - BURST_MS, *dep_p],
    ):
        out.append(
            ActivityWarning(
                kind="burst",
                severity="warning",
                namespace=b.namespace,
                deployment=b.deployment,
                data={"conversation_key": b.conversation_key},
                message=f"{b.n} tasks in conversation {b.conversation_key} in 10 min",
            )
        )
    recent = [r.id for r in runs] + [
        r.id
        for r in await hub.store.rows(
            _RunId,
            f"SELECT id FROM runs WHERE {ns} AND started_ms >= ?{dep_sql} AND finished_ms IS NOT NULL"
            " LIMIT 5000",
            [now - MODEL_ERR_MS, *dep_p],
        )
    ]
    if recent:
        calls = await hub.store.rows(
            _ModelCalls,
            "SELECT namespace, deployment, COUNT(*) AS n, SUM(CASE WHEN status = 'error' THEN 1 ELSE 0 END) AS bad"
            f" FROM spans WHERE run_id IN ({_marks(recent)}) AND name = 'gen_ai.chat' AND started_ms >= ?"
            " GROUP BY namespace, deployment",
            [*recent, now - MODEL_ERR_MS],
        )
        for c in calls:
            if c.n >= MODEL_ERR_MIN and c.bad >= MODEL_ERR_SHARE * c.n:
                out.append(
                    ActivityWarning(
                        kind="model_errors",
                        severity="warning",
                        namespace=c.namespace,
                        deployment=c.deployment,
                        data={"calls": c.n, "failed": c.bad},
                        message=f"{c.bad} of {c.n} model calls failed in 15 min",
                    )
                )
    for h in await hub.store.rows(
        _Hold, f"SELECT {columns(_Hold)} FROM provider_holds WHERE resumed_ms IS NULL AND {ns}"
    ):
        out.append(
            ActivityWarning(
                kind="provider_held",
                severity="critical",
                namespace=h.namespace,
                since_ms=h.held_since_ms,
                data={"account": h.account},
                message=f"provider account {h.account} held: {h.reason}; "
                f"`agen providers resume` ends it",
            )
        )
    for t in await hub.store.rows(
        _TriggerTrouble,
        "SELECT d.namespace, d.name, e.status, COUNT(*) AS n, MAX(e.created_ms) AS last FROM trigger_events e"
        f" JOIN deployments d ON d.id = e.deployment_id WHERE {dns} AND e.created_ms >= ?"
        f" AND e.status IN ('missed', 'rejected'){dep_sql.replace('deployment', 'd.name')}"
        " GROUP BY d.namespace, d.name, e.status",
        [now - DAY_MS, *dep_p],
    ):
        kind = "trigger_missed" if t.status == "missed" else "webhook_rejected"
        out.append(
            ActivityWarning(
                kind=kind,
                severity="warning",
                namespace=t.namespace,
                deployment=t.name,
                since_ms=t.last,
                data={"count": t.n},
                message=f"{t.n} trigger events {t.status} in the last day; "
                f"`agen triggers {t.name}` shows them",
            )
        )
    return out


class _Spent(NamedTuple):
    namespace: str
    deployment: str
    usd: Amount


class _Burst(NamedTuple):
    """A conversation that got many tasks in a short time."""

    namespace: str
    deployment: str
    conversation_key: str
    n: Count


class _RunId(NamedTuple):
    id: str


class _ModelCalls(NamedTuple):
    """A deployment's recent model calls and how many failed."""

    namespace: str
    deployment: str | None
    n: Count
    bad: Count


class _Hold(NamedTuple):
    """A provider account held now (``provider_holds``), as its warning says it."""

    namespace: str
    account: str
    reason: str
    held_since_ms: int


class _TriggerTrouble(NamedTuple):
    """A deployment's missed or rejected trigger events in the last day."""

    namespace: str
    name: str  # the deployment's
    status: str
    n: Count
    last: int


async def collect(
    hub: Hub, namespaces: list[str], deployment: str | None = None
) -> GetActivityResponse:
    """Runs, queues and warnings in ``namespaces`` (empty: every one), as of the Hub's clock."""
    now = hub.clock()
    sql = (
        f"SELECT * FROM runs WHERE finished_ms IS NULL AND {ns_sql('namespace', namespaces)}"
        + (" AND deployment = ?" if deployment else "")
        + f" ORDER BY started_ms LIMIT {MAX_RUNS}"
    )
    runs = await hub.store.rows(RunRow, sql, [deployment] if deployment else [])
    acts = await activities(hub, runs)
    queues = await _queues(hub, namespaces, deployment, now)
    warnings = _run_warnings(acts, {r.id: r for r in runs}, now)
    warnings += _queue_warnings(queues, acts)
    warnings += await _store_warnings(hub, namespaces, deployment, runs, now)
    return GetActivityResponse(runs=acts, queues=queues, warnings=warnings, now_ms=now)
