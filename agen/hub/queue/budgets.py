"""Daily budgets per deployment and per label (seed 000 §5 "Budgets", "Label budgets").

Spend is summed from the usage table for the UTC day a run started. A deployment whose spend
reached ``maxUsdPerDay`` is held at 0 until the next UTC midnight; an exhausted label only holds
back the tasks carrying it. Thresholds (50/80/100 %) are announced once via dedupe keys.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from agen.domain import DeploymentBudget, DeploymentRow, columns
from agen.errors import UnavailableError
from agen.store import Tx, loads
from agen.store.records import Amount

THRESHOLDS = (50, 80, 100)
PRESSURE_PCT = 80

Budgeted = DeploymentRow | DeploymentBudget
"""A deployment as SubmitTask reads it (the whole row) or as the lease gate and the leader read it."""
_BUDGETED_SQL = (
    f"SELECT {columns(DeploymentBudget)} FROM deployments WHERE budget NOT IN ('{{}}', '')"
)


def utc_day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d")


def next_reset_ms(ms: int) -> int:
    """The next UTC midnight after ``ms``: when today's budget resets."""
    day = datetime.fromtimestamp(ms / 1000, tz=UTC).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    return int((day + timedelta(days=1)).timestamp() * 1000)


def budget_config(dep: Budgeted) -> tuple[float | None, dict[str, float]]:
    """(maxUsdPerDay, labelUsdPerDay) from a deployment row's budget JSON (camelCase or snake_case)."""
    limit, labels = _parse_budget(
        dep.budget
    )  # once per distinct text: SubmitTask checks it every time
    return limit, dict(labels)


@functools.lru_cache(maxsize=256)
def _parse_budget(raw: str | bytes) -> tuple[float | None, tuple[tuple[str, float], ...]]:
    limit, labels = _budget_of(loads(raw, {}) or {})
    return limit, tuple(labels.items())


def _budget_of(cfg: dict[str, Any]) -> tuple[float | None, dict[str, float]]:
    limit = cfg.get("maxUsdPerDay", cfg.get("max_usd_per_day"))
    labels = cfg.get("labelUsdPerDay", cfg.get("label_usd_per_day")) or {}
    return (float(limit) if limit else None), {str(k): float(v) for k, v in labels.items()}


@dataclass
class BudgetState:
    day: str
    spent_usd: float
    limit_usd: float | None
    reset_at_ms: int
    label_spent: dict[str, float] = field(default_factory=dict)
    label_limits: dict[str, float] = field(default_factory=dict)

    @property
    def exhausted(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    @property
    def pressure(self) -> bool:
        """80 % spent: leased tasks carry budget_pressure (routing models drop a tier)."""
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd * PRESSURE_PCT / 100

    @property
    def exhausted_labels(self) -> list[str]:
        return sorted(
            k for k, lim in self.label_limits.items() if self.label_spent.get(k, 0.0) >= lim
        )


def spent_today(tx: Tx, namespace: str, deployment: str, day: str) -> float:
    return float(
        tx.scalar(
            "SELECT COALESCE(SUM(cost_usd), 0) FROM usage WHERE namespace = ? AND deployment = ? AND day = ?",
            (namespace, deployment, day),
        )
        or 0.0
    )


def label_spent_today(
    tx: Tx, namespace: str, deployment: str, day: str, rules: list[str]
) -> dict[str, float]:
    """Spend today per "key=value" rule: per-run sums, then filtered on the run's labels."""
    out = dict.fromkeys(rules, 0.0)
    if not rules:
        return out
    rows = tx.rows(
        _RunSpend,
        "SELECT r.labels AS labels, SUM(u.cost_usd) AS cost FROM usage u JOIN runs r ON r.id = u.run_id"
        " WHERE u.namespace = ? AND u.deployment = ? AND u.day = ? GROUP BY r.id",
        (namespace, deployment, day),
    )
    for row in rows:
        labels = loads(row.labels, {})
        for rule in rules:
            key, _, value = rule.partition("=")
            if labels.get(key) == value:
                out[rule] += row.cost
    return out


class _RunSpend(NamedTuple):
    """One run's spend today and the labels a label budget matches."""

    labels: str  # JSON text
    cost: Amount


def budget_state(tx: Tx, dep: Budgeted, now_ms: int) -> BudgetState:
    limit, labels = budget_config(dep)
    day = utc_day(now_ms)
    spent = spent_today(tx, dep.namespace, dep.name, day) if limit is not None else 0.0
    return BudgetState(
        day=day,
        spent_usd=spent,
        limit_usd=limit,
        reset_at_ms=next_reset_ms(now_ms),
        label_spent=label_spent_today(tx, dep.namespace, dep.name, day, list(labels)),
        label_limits=labels,
    )


def carries_exhausted_label(task_labels: Mapping[str, str], exhausted: list[str]) -> bool:
    return any(
        task_labels.get(rule.partition("=")[0]) == rule.partition("=")[2] for rule in exhausted
    )


def announce_thresholds(tx: Tx, dep: Budgeted, state: BudgetState) -> list[str]:
    """Emit budget.threshold once per threshold per day (deployment-wide and per label rule)."""
    sent: list[str] = []
    scopes: list[tuple[str, str | None, float, float]] = []
    if state.limit_usd is not None:
        scopes.append(("deployment", None, state.spent_usd, state.limit_usd))
    for rule, lim in state.label_limits.items():
        scopes.append(("label", rule, state.label_spent.get(rule, 0.0), lim))
    for scope, label_rule, spent, limit in scopes:
        for pct in THRESHOLDS:
            if spent < limit * pct / 100:
                break
            key = f"budget:{dep.id}:{state.day}:{label_rule or '*'}:{pct}"
            seq = tx.event(
                dep.namespace,
                "budget.threshold",
                severity="critical" if pct >= 100 else "warning" if pct >= 80 else "info",
                deployment=dep.name,
                dedupe_key=key,
                data={
                    "scope": scope,
                    "label": label_rule,
                    "percent": pct,
                    "spent_usd": round(spent, 6),
                    "limit_usd": limit,
                    "day": state.day,
                    "reset_at_ms": state.reset_at_ms,
                },
            )
            if seq is not None:
                sent.append(key)
    return sent


def announce_all_thresholds(tx: Tx, now_ms: int) -> list[str]:
    """Leader tick: check every deployment with a budget (cheap: one indexed sum each)."""
    sent: list[str] = []
    for dep in tx.rows(DeploymentBudget, _BUDGETED_SQL):
        limit, labels = budget_config(dep)
        if limit is None and not labels:
            continue
        sent += announce_thresholds(tx, dep, budget_state(tx, dep, now_ms))
    return sent


def require_budget_left(tx: Tx, dep: Budgeted, now_ms: int, what: str) -> None:
    """Refuse a wake-up or manual scale-up of a deployment held at 0 by its budget (503 + reset)."""
    state = budget_state(tx, dep, now_ms)
    if state.exhausted:
        raise UnavailableError(
            f"deployment {dep.name!r} spent ${state.spent_usd:.2f} of its ${state.limit_usd:.2f} daily budget;"
            f" {what} is refused until the budget resets at "
            f"{datetime.fromtimestamp(state.reset_at_ms / 1000, tz=UTC).isoformat()}",
            deployment=dep.name,
            reason="budget",
            reset_at_ms=state.reset_at_ms,
            retry_after_s=max(1, (state.reset_at_ms - now_ms + 999) // 1000),
        )


def exhausted_deployment_ids(tx: Tx, now_ms: int) -> set[str]:
    """Deployments held at 0 by their daily budget (no leases, wake-ups or scale-ups until reset)."""
    out: set[str] = set()
    for dep in tx.rows(DeploymentBudget, _BUDGETED_SQL):
        limit, _ = budget_config(dep)
        if limit is not None and spent_today(tx, dep.namespace, dep.name, utc_day(now_ms)) >= limit:
            out.add(dep.id)
    return out
