"""Leasing as a Nest does it: provider holds (held, one probe, back-off) and budgets (held at 0,
label budgets, budget pressure), with an injected clock and a real Store."""

from __future__ import annotations

from typing import Any

from agen.domain import DeploymentRow, LeasedTaskRow
from agen.hub import queue
from agen.hub.queue import providers
from agen.hub.queue.nest_leasing import budget_wait_reason, complete_from_nest, lease_for_nest
from agen.store import Store, Tx
from tests.unit.trigger_helpers import add_usage, deployment

NOON = 1_735_732_800_000  # 2025-01-01T12:00:00Z
DAY = "2025-01-01"
ACCT = "default/openai:OPENAI_API_KEY@http://127.0.0.1:9/v1"
ACCOUNT_ERROR: dict[str, Any] = {
    "status": "failed",
    "reason": "account_error",
    "summary": "HTTP 401 invalid key",
    "data": None,
    "artifacts": [],
}


async def submit(store: Store, dep: DeploymentRow, n: int = 1, **kw: Any) -> list[str]:
    def fn(tx: Tx) -> list[str]:
        tx.now_ms = NOON
        return [
            queue.submit_task(
                tx,
                queue.NewTask(
                    namespace="default",
                    deployment_id=dep.id,
                    deployment=dep.name,
                    input=f"t{i}",
                    **kw,
                ),
            )[0].id
            for i in range(n)
        ]

    return await store.write(fn)


async def lease(
    store: Store, dep: DeploymentRow, at: int, limit: int = 10, instance: str = "i1"
) -> list[LeasedTaskRow]:
    def fn(tx: Tx) -> list[LeasedTaskRow]:
        tx.now_ms = at
        return lease_for_nest(
            tx,
            deployment_id=dep.id,
            nest_id="n1",
            instance_id=instance,
            limit=limit,
            lease_ms=60_000,
        )

    return await store.write(fn)


async def complete(
    store: Store,
    row: LeasedTaskRow,
    at: int,
    outcome: dict[str, Any] | None,
    status: str = "failed",
) -> None:
    def fn(tx: Tx) -> None:
        tx.now_ms = at
        complete_from_nest(tx, row.task.id, row.lease_id, status=status, outcome=outcome, error="x")

    await store.write(fn)


async def reason_of(store: Store, task_id: str, at: int) -> str | None:
    def fn(tx: Tx) -> str | None:
        tx.now_ms = at
        row = queue.get_task(tx, task_id)
        return budget_wait_reason(tx, row, queue.wait_reason(tx, row))

    return await store.write(fn)


async def test_an_account_error_holds_leasing_until_retry_at_then_one_probe_whose_failure_backs_off(
    store: Store,
) -> None:
    dep = await deployment(store, "agent")
    await store.write(lambda tx: providers.sync_accounts(tx, dep.id, [ACCT]))
    await submit(store, dep, 4)
    [first] = await lease(store, dep, NOON, limit=1)
    await complete(store, first, NOON, ACCOUNT_ERROR)
    hold = await store.one("SELECT * FROM provider_holds WHERE account = ?", (ACCT,))
    assert hold is not None and hold["retry_at_ms"] == NOON + 5 * 60_000
    assert await lease(store, dep, NOON + 60_000) == []
    waiting = await store.scalar("SELECT id FROM tasks WHERE state = 'queued' ORDER BY seq LIMIT 1")
    assert await reason_of(store, waiting, NOON + 60_000) == "provider_hold"
    probe = await lease(store, dep, NOON + 5 * 60_000)
    assert len(probe) == 1  # exactly one probe, however many slots are free
    assert await lease(store, dep, NOON + 5 * 60_000 + 1) == []  # not a second while it runs
    await complete(store, probe[0], NOON + 6 * 60_000, ACCOUNT_ERROR)
    hold = await store.one("SELECT * FROM provider_holds WHERE account = ?", (ACCT,))
    assert hold is not None and hold["backoff_ms"] == 10 * 60_000
    assert hold["retry_at_ms"] == NOON + 16 * 60_000
    assert await lease(store, dep, NOON + 15 * 60_000) == []
    assert len(await lease(store, dep, NOON + 16 * 60_000)) == 1
    held_events = await store.scalar("SELECT COUNT(*) FROM events WHERE type = 'provider.held'")
    assert held_events == 1  # announced when the hold began, not on every backed-off probe


async def test_a_retried_completion_report_does_not_back_the_probe_off_twice(store: Store) -> None:
    dep = await deployment(store, "agent")
    await store.write(lambda tx: providers.sync_accounts(tx, dep.id, [ACCT]))
    await submit(store, dep, 2)
    [first] = await lease(store, dep, NOON, limit=1)
    await complete(store, first, NOON, ACCOUNT_ERROR)
    [probe] = await lease(store, dep, NOON + 5 * 60_000)
    await complete(store, probe, NOON + 5 * 60_000, ACCOUNT_ERROR)
    await complete(store, probe, NOON + 5 * 60_000, ACCOUNT_ERROR)  # the same report again
    assert await store.scalar("SELECT backoff_ms FROM provider_holds") == 10 * 60_000


async def test_a_task_carrying_an_exhausted_label_stays_queued_uncounted_and_says_label_budget(
    store: Store,
) -> None:
    dep = await deployment(store, "agent", budget={"labelUsdPerDay": {"team=research": 1.0}})
    await store.write(lambda tx: add_usage(tx, dep, 1.5, day=DAY, labels={"team": "research"}))
    [research] = await submit(store, dep, labels={"team": "research"})
    [ops] = await submit(store, dep, labels={"team": "ops"})
    leased = await lease(store, dep, NOON)
    assert [r.task.id for r in leased] == [ops]
    row = await store.one(
        "SELECT state, attempts, wait_reason FROM tasks WHERE id = ?", (research,)
    )
    assert row == {"state": "queued", "attempts": 0, "wait_reason": "label_budget"}
    assert await reason_of(store, research, NOON) == "label_budget"
    events = await store.all("SELECT type FROM events WHERE task_id = ?", (research,))
    assert [e["type"] for e in events] == ["task.queued"]  # passed over, not leased and released
    assert [r.task.id for r in await lease(store, dep, NOON + 86_400_000)] == [
        research
    ]  # a new UTC day


async def test_budget_pressure_marks_leased_tasks_and_keeps_background_work_queued(
    store: Store,
) -> None:
    dep = await deployment(store, "agent", budget={"maxUsdPerDay": 1.0})
    await store.write(lambda tx: add_usage(tx, dep, 0.85, day=DAY))
    [background] = await submit(store, dep, priority="background")
    [normal] = await submit(store, dep)
    leased = await lease(store, dep, NOON)
    assert [(r.task.id, r.budget_pressure) for r in leased] == [(normal, True)]
    assert await reason_of(store, background, NOON) == "budget"


async def test_a_deployment_that_spent_its_daily_budget_leases_nothing_until_the_day_ends(
    store: Store,
) -> None:
    dep = await deployment(store, "agent", budget={"maxUsdPerDay": 1.0})
    await store.write(lambda tx: add_usage(tx, dep, 1.0, day=DAY))
    [task] = await submit(store, dep)
    assert await lease(store, dep, NOON) == []
    assert await reason_of(store, task, NOON) == "budget"
    [next_day] = await lease(store, dep, NOON + 86_400_000)
    assert next_day.task.id == task and next_day.budget_pressure is False


async def test_an_instance_on_an_older_definition_leases_nothing_and_one_on_the_current_does(
    store: Store,
) -> None:
    """Seed 000 §4: instances on an old digest drain. A task submitted after an update must not go to
    an instance the update is about to stop (`agen run` on a changed folder answered from the old one)."""
    from tests.unit.queue_helpers import add_nest

    dep = await deployment(store, "d")
    old, new = "sha256:" + "1" * 64, "sha256:" + "2" * 64

    def instances(tx: Tx) -> None:
        nest = add_nest(tx, "n1")
        for iid, digest in (("i-old", old), ("i-new", new)):
            tx.execute(
                "INSERT INTO instances (id, nest_id, deployment_id, digest, state, started_ms,"
                " updated_ms) VALUES (?,?,?,?,'ready',?,?)",
                (iid, nest, dep.id, digest, NOON, NOON),
            )
        tx.execute("UPDATE deployments SET digest = ? WHERE id = ?", (new, dep.id))

    await store.write(instances)
    await submit(store, dep, 3)

    assert await lease(store, dep, NOON, limit=1, instance="i-old") == []
    assert len(await lease(store, dep, NOON, limit=1, instance="i-new")) == 1
    # an instance its Nest has not reported yet is not known to be stale: it leases
    assert len(await lease(store, dep, NOON, limit=1, instance="i-unreported")) == 1
