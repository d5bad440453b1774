"""Submitting tasks: idempotency, schedule keys, scheduling windows, admission, conversation keys."""

from __future__ import annotations

from typing import Any

import pytest

from agen.domain import LeasedTaskRow, TaskRow
from agen.errors import InvalidError, RateLimitedError
from agen.hub import queue as q
from agen.store import Store, now_ms
from tests.unit.queue_helpers import add_deployment, new_task

DAY = 24 * 3600 * 1000


async def submit(
    store: Store, dep: str, text: str = "hi", *, max_queued: int | None = None, **kw: Any
) -> tuple[TaskRow, bool]:
    return await store.write(
        lambda tx: q.submit_task(
            tx,
            new_task(dep, text, **kw),
            max_queued=max_queued,
        )
    )


async def lease(store: Store, dep: str, now_ms: int | None = None) -> list[LeasedTaskRow]:
    return await store.write(
        lambda tx: q.lease_tasks(
            tx,
            deployment_id=dep,
            nest_id="n",
            instance_id=None,
            limit=10,
            lease_ms=1000,
            now_ms=now_ms,
        )
    )


async def test_idempotency_key_returns_the_same_task(store: Store, dep: str) -> None:
    a, created_a = await submit(store, dep, "x", idempotency_key="k1")
    b, created_b = await submit(store, dep, "different input", idempotency_key="k1")
    assert created_a and not created_b and a.id == b.id and b.input == "x"
    c, created_c = await submit(store, dep, "x", idempotency_key="k2")
    assert created_c and c.id != a.id
    assert await store.scalar("SELECT COUNT(*) FROM events WHERE type = 'task.queued'") == 2


async def test_idempotency_key_still_answers_after_the_task_finished(
    store: Store, dep: str
) -> None:
    a, _ = await submit(store, dep, idempotency_key="once")
    [t] = await lease(store, dep)
    await store.write(
        lambda tx: q.complete_task(tx, t.task.id, t.lease_id, status="succeeded", outcome=None)
    )
    b, created = await submit(store, dep, idempotency_key="once")
    assert not created and b.id == a.id and b.state == "succeeded"


async def test_schedule_key_replaces_the_queued_task_with_that_key(store: Store, dep: str) -> None:
    first, _ = await submit(store, dep, "v1", schedule_key="nightly")
    second, _ = await submit(store, dep, "v2", schedule_key="nightly")
    rows = await store.all("SELECT id, state FROM tasks ORDER BY seq")
    assert rows == [
        {"id": first.id, "state": "cancelled"},
        {"id": second.id, "state": "queued"},
    ]
    ev = await store.one("SELECT data FROM events WHERE type = 'task.cancelled'")
    assert ev is not None and second.id in ev["data"]
    [t] = await lease(store, dep)  # a leased task with the key is not replaced
    third, _ = await submit(store, dep, "v3", schedule_key="nightly")
    states = {r["id"]: r["state"] for r in await store.all("SELECT id, state FROM tasks")}
    assert states[t.task.id] == "leased" and states[third.id] == "queued"


async def test_not_before_more_than_90_days_ahead_is_refused(store: Store, dep: str) -> None:
    now = await store.write(lambda tx: tx.now_ms)
    with pytest.raises(InvalidError, match="90 days"):
        await submit(store, dep, not_before_ms=now + 91 * DAY)
    ok, _ = await submit(store, dep, not_before_ms=now + 89 * DAY)
    assert ok.not_before_ms == now + 89 * DAY


async def test_not_before_delays_leasing_until_due(store: Store, dep: str) -> None:
    now = await store.write(lambda tx: tx.now_ms)
    t, _ = await submit(store, dep, not_before_ms=now + 5_000)
    assert await lease(store, dep, now_ms=now) == []
    counts = await store.write(lambda tx: q.queue_counts(tx, now_ms=now))
    assert counts[dep].scheduled == 1 and counts[dep].queued == 0 and counts[dep].load == 0
    assert [g.task.id for g in await lease(store, dep, now_ms=now + 5_000)] == [t.id]


async def test_not_after_expires_a_still_queued_task(store: Store, dep: str) -> None:
    now = await store.write(lambda tx: tx.now_ms)
    t, _ = await submit(store, dep, not_after_ms=now + 1_000)
    keep, _ = await submit(store, dep, not_after_ms=now + 60_000)
    assert await store.write(lambda tx: q.expire_overdue(tx, now + 500)) == []
    assert await store.write(lambda tx: q.expire_overdue(tx, now + 1_000)) == [t.id]
    rows = {r["id"]: r for r in await store.all("SELECT id, state, outcome FROM tasks")}
    assert rows[t.id]["state"] == "expired" and '"reason":"expired"' in rows[t.id]["outcome"]
    assert rows[keep.id]["state"] == "queued"
    assert await store.scalar("SELECT COUNT(*) FROM events WHERE type = 'task.expired'") == 1
    with pytest.raises(InvalidError, match="past"):
        await submit(store, dep, not_after_ms=now - 1)


async def test_admission_limit_refuses_when_queue_is_full(store: Store, dep: str) -> None:
    now = await store.write(lambda tx: tx.now_ms)
    await submit(store, dep, max_queued=2)
    await submit(store, dep, max_queued=2, not_before_ms=now + DAY)  # scheduled tasks count too
    with pytest.raises(RateLimitedError) as err:
        await submit(store, dep, max_queued=2)
    assert err.value.details["stage"] == "queue_full" and err.value.details["retry_after_s"] > 0
    await submit(store, dep, max_queued=3, schedule_key="s")
    # replacing the queued task of a schedule key leaves the count as it was: admitted
    again, created = await submit(store, dep, max_queued=3, schedule_key="s")
    assert created and again.state == "queued"
    with pytest.raises(RateLimitedError):
        await submit(store, dep, max_queued=3, schedule_key="other")


async def test_conversation_keys_are_scoped_by_source(store: Store, dep: str) -> None:
    a, _ = await submit(store, dep, conversation_key="c1")
    b, _ = await submit(store, dep, conversation_key="a2a:caller:ctx", source="a2a")
    c, _ = await submit(store, dep, conversation_key="api:c1")
    d, _ = await submit(store, dep, conversation_key="c1", source="webhook")
    assert (
        a.conversation_key,
        b.conversation_key,
        c.conversation_key,
        d.conversation_key,
    ) == ("api:c1", "a2a:caller:ctx", "api:c1", "webhook:c1")


async def test_bad_priority_and_trust_are_refused(store: Store, dep: str) -> None:
    with pytest.raises(InvalidError, match="priority"):
        await submit(store, dep, priority="asap")
    with pytest.raises(InvalidError, match="trust"):
        await submit(store, dep, trust="root")
    with pytest.raises(InvalidError, match="lock name"):
        await submit(store, dep, locks=[""])


async def test_queue_counts_per_deployment(store: Store, dep: str) -> None:
    other = await store.write(lambda tx: add_deployment(tx, "other"))
    for p in ("urgent", "normal", "normal"):
        await submit(store, dep, priority=p)
    await submit(store, other)
    await lease(store, dep)  # urgent + both normals leased
    await submit(store, dep, priority="high")
    counts = await store.write(lambda tx: q.queue_counts(tx))
    c = counts[dep]
    assert (c.queued, c.leased, c.running, c.urgent_load, c.load) == (1, 3, 0, 2, 4)
    assert c.oldest_queued_ms is not None and counts[other].queued == 1
    only = await store.write(lambda tx: q.queue_counts(tx, deployment_ids=[other]))
    assert list(only) == [other] and only[other].to_dict()["load"] == 1
    # the leader reads the same counts on a reader connection, off the writer
    assert await q.read_queue_counts(store, now_ms=now_ms()) == counts
