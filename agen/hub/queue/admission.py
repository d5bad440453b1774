"""Admission control at SubmitTask (seed 004's policy pipeline, built in): paused, budget,
queue_full, rate_limit — each refusal names its stage and when to retry (HTTP 429; a paused
deployment is 503 ``unavailable``: nothing is limited, it is stopped until `agen start`).

The rate limit is a token bucket per deployment persisted in the Store (admission_buckets),
so every Hub replica and a restarted Hub share it. A dry run evaluates every stage without
taking a token or queuing anything.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from agen.domain import DeploymentRow, columns
from agen.errors import AgenError, BudgetError, RateLimitedError, UnavailableError
from agen.hub.queue.budgets import budget_config, budget_state
from agen.store import Tx, loads

STAGES = ("paused", "budget", "queue_full", "rate_limit")


@dataclass(frozen=True)
class AdmissionConfig:
    rate_per_minute: int | None = None
    burst: int | None = None
    max_queued_tasks: int | None = None

    @property
    def capacity(self) -> float:
        return float(self.burst or self.rate_per_minute or 0)


def admission_config(dep: DeploymentRow) -> AdmissionConfig:
    """The ``admission`` section stored in a deployment row's policy JSON (camelCase or snake_case)."""
    return _parse_admission(dep.policy)  # once per distinct text: every SubmitTask asks


@functools.lru_cache(maxsize=256)
def _parse_admission(raw: str | bytes) -> AdmissionConfig:
    return _admission_of(loads(raw, {}) or {})


def _admission_of(policy: dict[str, Any]) -> AdmissionConfig:
    adm = policy.get("admission") or {}

    def pick(camel: str, snake: str) -> int | None:
        value = adm.get(camel, adm.get(snake))
        return None if value is None else int(value)

    return AdmissionConfig(
        rate_per_minute=pick("ratePerMinute", "rate_per_minute"),
        burst=pick("burst", "burst"),
        max_queued_tasks=pick("maxQueuedTasks", "max_queued_tasks"),
    )


@dataclass
class Check:
    stage: str
    ok: bool
    reason: str = ""
    retry_after_s: int | None = None


@dataclass
class Verdict:
    """Whether a task would be admitted now, and every stage's answer."""

    admitted: bool
    stage: str | None = None
    reason: str = ""
    retry_after_s: int | None = None
    checks: list[Check] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def error(self, deployment: str) -> AgenError:
        details = {
            "stage": self.stage,
            "retry_after_s": self.retry_after_s,
            "deployment": deployment,
        }
        msg = f"deployment {deployment!r} refused the task at stage {self.stage}: {self.reason}"
        if self.retry_after_s is not None:
            msg += f"; retry after {self.retry_after_s}s"
        if self.stage == "budget":
            return BudgetError(msg, **details)
        if self.stage == "paused":
            return UnavailableError(msg, **details)
        return RateLimitedError(msg, **details)


def _bucket(tx: Tx, dep_id: str, cfg: AdmissionConfig, now_ms: int) -> float:
    row = tx.row(
        _Bucket,
        f"SELECT {columns(_Bucket)} FROM admission_buckets WHERE deployment_id = ?",
        (dep_id,),
    )
    if row is None:
        return cfg.capacity
    rate_per_ms = (cfg.rate_per_minute or 0) / 60_000
    elapsed = max(0, now_ms - row.updated_ms)
    return float(min(cfg.capacity, row.tokens + elapsed * rate_per_ms))


class _Bucket(NamedTuple):
    """A deployment's rate-limit bucket as stored: its tokens when it was last written."""

    tokens: float
    updated_ms: int


def evaluate(tx: Tx, dep: DeploymentRow, now_ms: int, *, consume: bool) -> Verdict:
    """Run every stage in order; the first refusal decides. ``consume`` takes a rate token."""
    cfg = admission_config(dep)
    checks: list[Check] = []
    if dep.paused:
        why = dep.pause_reason or "the deployment is paused"
        checks.append(Check("paused", False, f"{why}; `agen start {dep.name}` resumes it"))
    else:
        checks.append(Check("paused", True))
    limit, _labels = budget_config(dep)  # label budgets hold back leases, not admission
    state = budget_state(tx, dep, now_ms) if limit is not None else None
    if state is not None and state.exhausted:
        checks.append(
            Check(
                "budget",
                False,
                f"spent ${state.spent_usd:.2f} of ${state.limit_usd:.2f} today (UTC); resets at midnight UTC",
                max(1, math.ceil((state.reset_at_ms - now_ms) / 1000)),
            )
        )
    else:
        checks.append(Check("budget", True))
    if cfg.max_queued_tasks is not None:
        queued = int(
            tx.scalar(
                "SELECT COUNT(*) FROM tasks WHERE deployment_id = ? AND state = 'queued'",
                (dep.id,),
            )
            or 0
        )
        ok = queued < cfg.max_queued_tasks
        checks.append(
            Check(
                "queue_full",
                ok,
                "" if ok else f"{queued} tasks queued, maxQueuedTasks is {cfg.max_queued_tasks}",
                None if ok else 5,
            )
        )
    tokens = None
    if cfg.rate_per_minute:
        tokens = _bucket(tx, dep.id, cfg, now_ms)
        ok = tokens >= 1.0
        wait = math.ceil((1.0 - tokens) * 60 / cfg.rate_per_minute) if not ok else None
        checks.append(
            Check(
                "rate_limit",
                ok,
                ""
                if ok
                else f"more than {cfg.rate_per_minute} tasks a minute (burst {int(cfg.capacity)})",
                max(1, wait) if wait is not None else None,
            )
        )
    refused = next((c for c in checks if not c.ok), None)
    if refused is None and consume and tokens is not None:
        tx.execute(
            "INSERT INTO admission_buckets (deployment_id, tokens, updated_ms) VALUES (?,?,?)"
            " ON CONFLICT (deployment_id) DO UPDATE SET tokens = excluded.tokens, updated_ms = excluded.updated_ms",
            (dep.id, tokens - 1.0, now_ms),
        )
    if refused is None:
        return Verdict(True, checks=checks)
    return Verdict(False, refused.stage, refused.reason, refused.retry_after_s, checks)


def admit(tx: Tx, dep: DeploymentRow, now_ms: int) -> None:
    """SubmitTask's gate: raise the refusing stage's error, else take a rate token."""
    verdict = evaluate(tx, dep, now_ms, consume=True)
    if not verdict.admitted:
        raise verdict.error(dep.name)


def dry_run(tx: Tx, dep: DeploymentRow, now_ms: int) -> Verdict:
    """DryRunTask: every check, nothing consumed, nothing queued."""
    return evaluate(tx, dep, now_ms, consume=False)
