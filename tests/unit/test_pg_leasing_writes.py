"""Leasing on Postgres: leases run side by side (no fleet-wide lock), yet no task is leased twice, a
conversation still runs one task at a time, and a follower of the event log never skips an event."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest

from agen.domain import LeasedTaskRow
from agen.hub import queue as q
from agen.store import Tx, event_log
from tests.unit.queue_helpers import add_deployment, new_task

DEADLINE_S = 60.0


@pytest.fixture
async def pg(pg_url: str) -> AsyncIterator[Any]:
    from agen.store.postgres import PostgresStore

    s = await PostgresStore.open(pg_url, pool_size=4)
    yield s
    await s.close()


def _lease(
    tx: Tx, dep: str, instance: str, *, now_ms: int | None = None, limit: int = 1
) -> list[LeasedTaskRow]:
    return q.lease_tasks(
        tx,
        deployment_id=dep,
        nest_id="n1",
        instance_id=instance,
        limit=limit,
        lease_ms=600_000,
        now_ms=now_ms,
    )


async def _until(check: Any) -> None:
    """Poll ``check`` (async, returns bool) until it holds; fail after a generous deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not await check():
        assert loop.time() < deadline, "the condition did not come true"
        await asyncio.sleep(0.02)


async def test_two_leasing_writes_run_side_by_side_and_lease_different_tasks(pg: Any) -> None:
    """The second lease commits while the first is still open: leases no longer queue on one write lock."""
    dep = await pg.write(lambda tx: add_deployment(tx))
    for i in range(2):
        await pg.write(partial(q.submit_task, t=new_task(dep, f"t{i}")))
    first_leased, second_done = threading.Event(), threading.Event()

    def first(tx: Tx) -> list[LeasedTaskRow]:
        got = _lease(tx, dep, "i1")
        first_leased.set()
        assert second_done.wait(DEADLINE_S), "the second lease waited for the first to commit"
        return got

    a = asyncio.create_task(pg.write(first))
    await asyncio.to_thread(first_leased.wait, DEADLINE_S)
    b = await pg.write(lambda tx: _lease(tx, dep, "i2"))
    second_done.set()
    a_rows = await a
    assert len(a_rows) == 1 and len(b) == 1 and a_rows[0].task.id != b[0].task.id
    leased = await pg.all(
        "SELECT task_id FROM events WHERE type = 'task.leased' ORDER BY xid, seq"
    )  # the log's order: by transaction
    assert {r["task_id"] for r in leased} == {b[0].task.id, a_rows[0].task.id}


async def test_a_conversation_still_leases_one_task_at_a_time_under_concurrent_leasing(
    pg: Any, pg_url: str
) -> None:
    """The head of a conversation is decided from rows the leaser has not locked, so concurrent leasers
    take turns for it: the older, scheduled task that comes due while the newer one is being leased waits."""
    import psycopg

    dep = await pg.write(lambda tx: add_deployment(tx))
    t0 = await pg.scalar("SELECT CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT)")
    older, _ = await pg.write(
        partial(
            q.submit_task,
            t=new_task(dep, "older", conversation_key="c", not_before_ms=t0 + 3_600_000),
        )
    )
    newer, _ = await pg.write(
        partial(q.submit_task, t=new_task(dep, "newer", conversation_key="c"))
    )
    first_leased, release_first = threading.Event(), threading.Event()

    def first(tx: Tx) -> list[LeasedTaskRow]:
        got = _lease(tx, dep, "i1", now_ms=t0)  # the older one is not due yet: the newer one leads
        first_leased.set()
        assert release_first.wait(DEADLINE_S)
        return got

    a = asyncio.create_task(pg.write(first))
    await asyncio.to_thread(first_leased.wait, DEADLINE_S)
    # an hour later for the second leaser: the older task is due, and the newer one is not committed as leased
    b = asyncio.create_task(pg.write(lambda tx: _lease(tx, dep, "i2", now_ms=t0 + 7_200_000)))

    async def second_waits_or_is_done() -> bool:
        if b.done():
            return True
        with psycopg.connect(pg_url) as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ).fetchone()
        return bool(row and row[0])

    await _until(second_waits_or_is_done)
    release_first.set()
    assert [r.task.id for r in await a] == [newer.id]
    assert await b == []  # the older task waits until the newer one ends
    assert await pg.scalar("SELECT state FROM tasks WHERE id = ?", (older.id,)) == "queued"


async def test_an_event_follower_never_skips_an_event_while_writers_run_side_by_side(
    pg: Any, pg_url: str
) -> None:
    """Readers follow the log as "everything settled after event N" (agen.store.event_log): an event that
    commits after a follower passed a higher seq is still read, once."""
    from agen.store.postgres import PostgresStore

    other = await PostgresStore.open(pg_url, pool_size=4)  # a second Hub on the database
    try:
        dep = await pg.write(lambda tx: add_deployment(tx))
        n = 60
        for start in range(0, n, 20):

            def submit(tx: Tx, start: int = start) -> None:
                for i in range(start, start + 20):
                    q.submit_task(tx, new_task(dep, f"t{i}"))

            await pg.write(submit)
        seen: list[int] = []
        stop = asyncio.Event()

        async def follow() -> None:
            while True:
                done = stop.is_set()
                after = seen[-1] if seen else 0
                since, params = event_log.after("postgres", after)
                rows = await pg.all(
                    f"SELECT seq FROM events WHERE {since} ORDER BY xid, seq", params
                )
                seen.extend(int(r["seq"]) for r in rows)
                if done:
                    return
                await asyncio.sleep(0)

        async def leaser(store: Any, w: int) -> None:
            while await store.write(lambda tx: _lease(tx, dep, f"i{w}")):
                pass

        async def submitter() -> None:
            for i in range(20):
                await other.write(partial(q.submit_task, t=new_task(dep, f"late{i}")))

        follower = asyncio.create_task(follow())
        await asyncio.gather(*(leaser(s, w) for w, s in enumerate((pg, other, pg, other))))
        await submitter()
        await asyncio.gather(*(leaser(s, w) for w, s in enumerate((pg, other))))
        stop.set()
        await follower
        every = [int(r["seq"]) for r in await pg.all("SELECT seq FROM events ORDER BY xid, seq")]
        assert seen == every
        twice = await pg.all(
            "SELECT task_id FROM events WHERE type = 'task.leased' GROUP BY task_id HAVING COUNT(*) > 1"
        )
        assert twice == []
        assert await pg.scalar("SELECT COUNT(*) FROM tasks WHERE state = 'leased'") == n + 20
    finally:
        await other.close()


async def test_a_held_provider_account_still_gets_exactly_one_probe_under_concurrent_leasing(
    pg: Any, pg_url: str
) -> None:
    """After a provider hold's retry time one task probes the account; two leases at once must not both
    take the probe (the second reads the first's probe once it has committed)."""
    import psycopg

    from agen.hub.queue import providers
    from agen.hub.queue.nest_leasing import lease_for_nest

    acct = "default/openai:OPENAI_API_KEY@http://127.0.0.1:9999/v1"
    dep = await pg.write(lambda tx: add_deployment(tx))
    await pg.write(lambda tx: providers.sync_accounts(tx, dep, [acct]))
    failed, _ = await pg.write(partial(q.submit_task, t=new_task(dep, "failed")))
    outcome = {"status": "failed", "reason": "provider_account", "data": {"account": acct}}
    hold = await pg.write(lambda tx: providers.on_task_failed(tx, failed.id, dep, outcome, None))
    await pg.write(lambda tx: q.cancel_task(tx, failed.id, by="test"))
    for i in range(2):
        await pg.write(partial(q.submit_task, t=new_task(dep, f"t{i}")))
    assert hold is not None
    after_retry = hold.retry_at_ms + 1

    def lease(tx: Tx, instance: str) -> list[LeasedTaskRow]:
        tx.now_ms = after_retry
        return lease_for_nest(
            tx, deployment_id=dep, nest_id="n1", instance_id=instance, limit=1, lease_ms=600_000
        )

    first_leased, release_first = threading.Event(), threading.Event()

    def first(tx: Tx) -> list[LeasedTaskRow]:
        got = lease(tx, "i1")
        first_leased.set()
        assert release_first.wait(DEADLINE_S)
        return got

    a = asyncio.create_task(pg.write(first))
    await asyncio.to_thread(first_leased.wait, DEADLINE_S)
    b = asyncio.create_task(pg.write(lambda tx: lease(tx, "i2")))

    async def second_waits_or_is_done() -> bool:
        if b.done():
            return True
        with psycopg.connect(pg_url) as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ).fetchone()
        return bool(row and row[0])

    await _until(second_waits_or_is_done)
    release_first.set()
    assert len(await a) == 1
    assert await b == []  # the probe is unfinished: the account stays held for everything else
