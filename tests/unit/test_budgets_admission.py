"""Daily budgets, label budgets, thresholds and admission control, at the transaction level."""

from __future__ import annotations

import pytest

from agen.domain import DeploymentKind, DeploymentRow
from agen.errors import BudgetError, RateLimitedError, UnavailableError
from agen.hub.queue import admission, budgets
from agen.store import Store, Tx, dumps, new_ulid
from tests.unit.trigger_helpers import add_usage, deployment

NOON = 1_735_732_800_000  # 2025-01-01T12:00:00Z
DAY = "2025-01-01"


def queue_task(tx: Tx, dep: DeploymentRow, state: str = "queued") -> None:
    tid = new_ulid()
    seq = int(  # Postgres: from the sequence its task INSERTs use (migration 0025)
        tx.scalar(
            "SELECT nextval('tasks_seq_seq')"
            if tx.dialect == "postgres"
            else "SELECT COALESCE(MAX(seq), 0) + 1 FROM tasks"
        )
    )
    tx.execute(
        "INSERT INTO tasks (id, namespace, deployment_id, deployment, state, input, root_task_id, seq, created_ms,"
        " updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (tid, dep.namespace, dep.id, dep.name, state, "x", tid, seq, tx.now_ms, tx.now_ms),
    )


async def test_budget_thresholds_are_announced_once_each_and_the_limit_holds_the_deployment(
    store: Store,
) -> None:
    dep = await deployment(store, "spender", budget={"maxUsdPerDay": 1.0})
    await store.write(lambda tx: add_usage(tx, dep, 0.55, day=DAY))
    sent = await store.write(lambda tx: budgets.announce_all_thresholds(tx, NOON))
    assert [k.rsplit(":", 1)[1] for k in sent] == ["50"]
    assert await store.write(lambda tx: budgets.announce_all_thresholds(tx, NOON)) == []
    await store.write(lambda tx: add_usage(tx, dep, 0.5, day=DAY))
    sent = await store.write(lambda tx: budgets.announce_all_thresholds(tx, NOON))
    assert [k.rsplit(":", 1)[1] for k in sent] == ["80", "100"]
    rows = await store.all(
        "SELECT data, severity FROM events WHERE type = 'budget.threshold' ORDER BY seq"
    )
    assert [r["severity"] for r in rows] == ["info", "warning", "critical"]

    state = await store.write(lambda tx: budgets.budget_state(tx, dep, NOON))
    assert state.exhausted and state.pressure
    assert state.reset_at_ms == NOON + 12 * 3_600_000
    with pytest.raises(UnavailableError) as info:
        await store.write(lambda tx: budgets.require_budget_left(tx, dep, NOON, "scaling up"))
    assert info.value.details["reset_at_ms"] == state.reset_at_ms and info.value.http_status == 503
    # The next UTC day starts fresh.
    tomorrow = await store.write(lambda tx: budgets.budget_state(tx, dep, NOON + 86_400_000))
    assert not tomorrow.exhausted and tomorrow.spent_usd == 0


async def test_budget_pressure_starts_at_80_percent(store: Store) -> None:
    dep = await deployment(store, "p", budget={"maxUsdPerDay": 10.0})
    await store.write(lambda tx: add_usage(tx, dep, 7.9, day=DAY))
    assert not (await store.write(lambda tx: budgets.budget_state(tx, dep, NOON))).pressure
    await store.write(lambda tx: add_usage(tx, dep, 0.1, day=DAY))
    state = await store.write(lambda tx: budgets.budget_state(tx, dep, NOON))
    assert state.pressure and not state.exhausted


async def test_an_exhausted_label_holds_back_only_tasks_carrying_it(store: Store) -> None:
    dep = await deployment(store, "teams", budget={"labelUsdPerDay": {"team=research": 1.0}})
    await store.write(lambda tx: add_usage(tx, dep, 1.2, day=DAY, labels={"team": "research"}))
    await store.write(lambda tx: add_usage(tx, dep, 5.0, day=DAY, labels={"team": "ops"}))
    state = await store.write(lambda tx: budgets.budget_state(tx, dep, NOON))
    assert not state.exhausted
    assert state.exhausted_labels == ["team=research"]
    assert budgets.carries_exhausted_label({"team": "research"}, state.exhausted_labels)
    assert not budgets.carries_exhausted_label({"team": "ops"}, state.exhausted_labels)
    sent = await store.write(lambda tx: budgets.announce_all_thresholds(tx, NOON))
    assert len(sent) == 3 and all(":team=research:" in k for k in sent)


async def test_rate_limit_refuses_past_the_burst_names_the_stage_and_refills_over_time(
    store: Store,
) -> None:
    dep = await deployment(store, "rl", admission={"ratePerMinute": 60, "burst": 2})
    await store.write(lambda tx: admission.admit(tx, dep, NOON))
    await store.write(lambda tx: admission.admit(tx, dep, NOON))
    with pytest.raises(RateLimitedError) as info:
        await store.write(lambda tx: admission.admit(tx, dep, NOON))
    assert info.value.details["stage"] == "rate_limit" and info.value.details["retry_after_s"] == 1
    assert info.value.http_status == 429
    await store.write(lambda tx: admission.admit(tx, dep, NOON + 1000))  # one token back after 1 s


async def test_dry_run_reports_the_verdict_without_taking_a_token(store: Store) -> None:
    dep = await deployment(store, "dry", admission={"ratePerMinute": 1, "burst": 1})
    for _ in range(3):
        verdict = await store.write(lambda tx: admission.dry_run(tx, dep, NOON))
        assert verdict.admitted and [c.stage for c in verdict.checks] == [
            "paused",
            "budget",
            "rate_limit",
        ]
    await store.write(lambda tx: admission.admit(tx, dep, NOON))
    verdict = await store.write(lambda tx: admission.dry_run(tx, dep, NOON))
    assert not verdict.admitted and verdict.stage == "rate_limit" and verdict.retry_after_s == 60


async def test_queue_full_paused_and_budget_stages(store: Store) -> None:
    full = await deployment(store, "full", admission={"maxQueuedTasks": 2})

    def three(tx: Tx) -> None:
        queue_task(tx, full)
        queue_task(tx, full)
        queue_task(tx, full, "running")

    await store.write(three)
    with pytest.raises(RateLimitedError) as info:
        await store.write(lambda tx: admission.admit(tx, full, NOON))
    assert info.value.details["stage"] == "queue_full"

    paused = await deployment(store, "paused", paused=True)
    verdict = await store.write(lambda tx: admission.dry_run(tx, paused, NOON))
    assert verdict.stage == "paused" and "agen start paused" in verdict.reason

    broke = await deployment(store, "broke", budget={"maxUsdPerDay": 0.5})
    await store.write(lambda tx: add_usage(tx, broke, 0.5, day=DAY))
    with pytest.raises(BudgetError) as binfo:
        await store.write(lambda tx: admission.admit(tx, broke, NOON))
    assert binfo.value.details["stage"] == "budget"
    assert binfo.value.details["retry_after_s"] == 12 * 3600


def test_admission_config_reads_the_policy_json() -> None:
    policy = dumps({"admission": {"ratePerMinute": 30, "maxQueuedTasks": 5}})
    dep = DeploymentRow("d", "default", "d", DeploymentKind.POOL, "d@x", "x", "{}", 0, 0, 0)
    cfg = admission.admission_config(dep._replace(policy=policy))
    assert cfg.rate_per_minute == 30 and cfg.max_queued_tasks == 5 and cfg.capacity == 30
