"""The one activity word of a deployment or a run (seed 001 "Agent States").

``working`` (something runs), ``needs`` with what it needs (``needs approval``: a person must
answer), ``stopped`` with a reason
(paused, unplaced, budget, provider), ``failing`` (a deployment whose instances keep failing to
start: it would otherwise look ``idle`` while every task waits forever), ``idle``. The rows are checked in that order, and
the order is the rule: every screen and command reads the word from here, so no two
screens can disagree about what an agent is doing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from agen.domain import DeploymentRow
from agen.store import Store, loads
from agen.store.records import Amount, Count

Word = Literal["working", "needs", "stopped", "failing", "idle"]
Needs = Literal["approval"]
"""What a ``needs`` agent waits for (the wire's ``needs``): a person's answer to a tool call."""
StoppedReason = Literal["paused", "unplaced", "budget", "provider"]
STOP_ORDER: tuple[StoppedReason, ...] = ("paused", "unplaced", "budget", "provider")


@dataclass(frozen=True)
class Activity:
    word: Word
    stopped_reason: StoppedReason | None = None
    waiting_on: Literal["delegate"] | None = None  # working only through a delegate it waits on
    needs: Needs | None = None

    def __str__(self) -> str:
        if self.needs:
            return f"needs {self.needs}"
        return f"stopped ({self.stopped_reason})" if self.stopped_reason else self.word


def activity(
    *,
    working: bool,
    needs: bool,
    paused: bool = False,
    unplaced: bool = False,
    budget: bool = False,
    provider: bool = False,
) -> Activity:
    """The word for these facts; what runs now wins over a question, a question over a stop."""
    if working:
        return Activity("working")
    if needs:
        return Activity("needs", needs="approval")
    facts = {"paused": paused, "unplaced": unplaced, "budget": budget, "provider": provider}
    for reason in STOP_ORDER:
        if facts[reason]:
            return Activity("stopped", reason)
    return Activity("idle")


def run_activity(
    status: str, *, finished: bool, task_state: str | None = None, held: bool = False
) -> Activity:
    """A run: running -> working, waiting for an approval -> needs, a held task -> stopped (paused)."""
    if finished:
        return Activity("idle")
    if status == "waiting_approval":
        return activity(working=False, needs=True)
    if held or task_state == "queued":
        # A paused task's run (or one given back to the queue) is not running right now.
        return activity(working=False, needs=False, paused=held)
    return activity(working=True, needs=False)


@dataclass
class DeploymentFacts:
    """What the deployment word is computed from, read in a few grouped queries."""

    pending_approvals: dict[tuple[str, str], int]
    spent_today: dict[tuple[str, str], float]
    provider_held: set[str]
    nests_alive: bool
    failing: dict[str, str] = field(default_factory=dict)  # deployment id -> the last start error
    failures: dict[str, Failures] = field(default_factory=dict)  # deployment id -> its last hour's


@dataclass(frozen=True)
class Failures:
    """A deployment's failed tasks in the last FAILED_WINDOW_MS: how many, and the last one's error."""

    count: int
    last_error: str | None
    last_ms: int


FAILED_WINDOW_MS = 3_600_000
"""The window of the FAILED (1h) figure of `agen ps` and the Fleet: tasks that ended failed in it."""


def _limit(budget_json: Any) -> float | None:
    cfg = (
        loads(budget_json, {}) if isinstance(budget_json, str | bytes) else dict(budget_json or {})
    )
    value = cfg.get("maxUsdPerDay", cfg.get("max_usd_per_day"))
    return float(value) if value else None


async def deployment_facts(
    store: Store, rows: Iterable[DeploymentRow], now_ms: int
) -> DeploymentFacts:
    """Grouped reads for many deployments at once (bounded: one query per fact, indexed)."""
    from agen.hub.queue.budgets import utc_day

    rows = list(rows)
    namespaces = sorted({r.namespace for r in rows})
    if not rows:
        return DeploymentFacts({}, {}, set(), True)
    marks = ",".join("?" * len(namespaces))
    approvals = await store.rows(
        _Pending,
        f"SELECT namespace, deployment, COUNT(*) AS n FROM approvals WHERE namespace IN ({marks})"
        " AND state = 'pending' GROUP BY namespace, deployment",
        namespaces,
    )
    spent = await store.rows(
        _Spent,
        f"SELECT namespace, deployment, SUM(cost_usd) AS usd FROM usage WHERE namespace IN ({marks})"
        " AND day = ? GROUP BY namespace, deployment",
        [*namespaces, utc_day(now_ms)],
    )
    held = await store.rows(
        _HeldDeployment,
        "SELECT DISTINCT a.deployment_id FROM provider_holds h JOIN provider_accounts a ON a.account = h.account"
        " WHERE h.resumed_ms IS NULL",
    )
    alive = await store.scalar("SELECT COUNT(*) FROM nests WHERE state = 'active'")
    return DeploymentFacts(
        pending_approvals={(r.namespace, r.deployment): r.n for r in approvals},
        spent_today={(r.namespace, r.deployment): r.usd for r in spent},
        provider_held={r.deployment_id for r in held},
        nests_alive=bool(alive),
        failing=await failing_starts(store, [r.id for r in rows]),
        failures=await recent_failures(store, [r.id for r in rows], now_ms - FAILED_WINDOW_MS),
    )


class _Pending(NamedTuple):
    namespace: str
    deployment: str
    n: Count


class _Spent(NamedTuple):
    namespace: str
    deployment: str
    usd: Amount


class _HeldDeployment(NamedTuple):
    deployment_id: str


class _LastFailure(NamedTuple):
    """A deployment's latest failed task in the window, and how many failed in it."""

    deployment_id: str
    error: str | None
    finished_ms: int
    n: Count


class _LatestStart(NamedTuple):
    """One of a deployment's latest instances on its current digest."""

    deployment_id: str
    state: str
    exit_reason: str | None


async def recent_failures(
    store: Store, deployment_ids: list[str], since_ms: int
) -> dict[str, Failures]:
    """Per deployment, its tasks that ended failed since ``since_ms``: one query for all of them (the
    partial index tasks_failed_finished holds failed tasks only), so a deployment whose every task
    fails (model unreachable) shows it instead of looking idle."""
    if not deployment_ids:
        return {}
    marks = ",".join("?" * len(deployment_ids))
    rows = await store.rows(
        _LastFailure,
        "SELECT deployment_id, error, finished_ms, n FROM ("
        " SELECT deployment_id, error, finished_ms,"
        "  COUNT(*) OVER (PARTITION BY deployment_id) AS n,"
        "  ROW_NUMBER() OVER (PARTITION BY deployment_id ORDER BY finished_ms DESC, id DESC) AS k"
        f" FROM tasks WHERE state = 'failed' AND deployment_id IN ({marks}) AND finished_ms >= ?"
        ") failed WHERE k = 1",
        [*deployment_ids, since_ms],
    )
    return {r.deployment_id: Failures(r.n, r.error, r.finished_ms) for r in rows}


async def failing_starts(store: Store, deployment_ids: list[str]) -> dict[str, str]:
    """Deployments whose latest FAILING_AFTER instances on the current digest all failed to start, with
    the last start error: the rule of agen.hub.fleet.instances.instance_failing, for many at once."""
    from agen.hub.fleet.instances import FAILING_AFTER
    from agen.wire.nests import START_FAILED

    if not deployment_ids:
        return {}
    marks = ",".join("?" * len(deployment_ids))
    rows = await store.rows(
        _LatestStart,
        "SELECT deployment_id, state, exit_reason FROM ("
        " SELECT i.deployment_id, i.state, i.exit_reason, ROW_NUMBER() OVER ("
        "  PARTITION BY i.deployment_id ORDER BY i.started_ms DESC, i.id DESC) AS n"
        " FROM instances i JOIN deployments d ON d.id = i.deployment_id AND i.digest = d.digest"
        f" WHERE i.deployment_id IN ({marks})) latest WHERE n <= ? ORDER BY deployment_id, n",
        [*deployment_ids, FAILING_AFTER],
    )
    latest: dict[str, list[_LatestStart]] = {}
    for r in rows:
        latest.setdefault(r.deployment_id, []).append(r)
    return {
        dep: str(group[0].exit_reason)[len(START_FAILED) :]
        for dep, group in latest.items()
        if len(group) == FAILING_AFTER
        and all(
            g.state == "failed" and str(g.exit_reason or "").startswith(START_FAILED) for g in group
        )
    }


def deployment_activity(
    row: DeploymentRow,
    facts: DeploymentFacts,
    *,
    running: int,
    queued: int,
    ready: int,
    delegating: int = 0,
) -> Activity:
    """A deployment: a running task -> working; a pending approval -> needs; then the stop reasons.

    ``delegating``: its tasks suspended waiting on child tasks. A delegate doing its work is work in
    progress (seed 001: a run it launched that is running counts as working), so such a deployment
    is working, waiting on a delegate, unless a task of its own runs now."""
    if delegating and running <= facts.pending_approvals.get((row.namespace, row.name), 0):
        return Activity("working", waiting_on="delegate")
    key = (row.namespace, row.name)
    pending = facts.pending_approvals.get(key, 0)
    limit = _limit(row.budget)
    over_budget = limit is not None and facts.spent_today.get(key, 0.0) >= limit
    wants = row.desired > 0 or queued > 0
    word = activity(
        working=running > pending,
        needs=pending > 0,
        paused=row.paused,
        unplaced=wants and ready == 0 and not facts.nests_alive,
        budget=over_budget,
        provider=row.id in facts.provider_held,
    )
    if word.word == "idle" and ready == 0 and row.id in facts.failing:
        return Activity("failing")  # nothing runs, and nothing can start: not idle
    return word
