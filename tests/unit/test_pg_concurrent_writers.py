"""Postgres with writers side by side (DESIGN.md §4): no fleet-wide lock on the task path, few commits per
task, and an event log whose followers see every event once, in one order, while writers commit in parallel.

Statements, commits and advisory locks are counted by pg_stat_statements (the test cluster preloads it).
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest

from agen.hub import queue as q
from agen.hub.events.log import read_events
from agen.hub.queue.nest_leasing import complete_from_nest, lease_for_nest
from agen.store import Tx
from tests.unit.queue_helpers import add_deployment, new_task

WRITERS = 8
EVENTS = 20_000
FOLLOWERS = 3
TASKS = 30
DEADLINE_S = 300.0


@pytest.fixture
async def stores(pg_url: str) -> AsyncIterator[list[Any]]:
    """Three stores on one database, as three Hub processes: two write, one follows."""
    from agen.store.postgres import PostgresStore

    opened = [await PostgresStore.open(pg_url, pool_size=WRITERS // 2) for _ in range(3)]
    yield opened
    for s in opened:
        await s.close()


def _append(tx: Tx, writer: int, n: int, hold: bool) -> None:
    for i in range(n):
        tx.event("default", "bench.event", data={"writer": writer, "i": i})
    if hold:
        # A statement that reads events appends the kept ones now (seqs taken), then the transaction stays
        # open a moment: later transactions take higher seqs and may commit before this one.
        tx.execute("SELECT pg_sleep(0.002) WHERE NOT EXISTS (SELECT 1 FROM events WHERE seq < 0)")


async def test_followers_see_every_event_once_in_one_order_while_8_writers_commit_side_by_side(
    stores: list[Any],
) -> None:
    writers, follower_store = stores[:2], stores[2]
    per_writer = EVENTS // WRITERS
    done = asyncio.Event()

    async def writer(w: int) -> None:
        rng = random.Random(w)
        store = writers[w % 2]
        left = per_writer
        while left:
            n = min(left, rng.randint(1, 9))
            await store.write(partial(_append, writer=w, n=n, hold=rng.random() < 0.3))
            left -= n

    async def follower() -> list[int]:
        seen: list[int] = []
        cursor = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE_S
        while True:
            finished = done.is_set()  # read before the page: a page after it holds every commit
            page = await read_events(follower_store, [], after=cursor, limit=500)
            seen.extend(int(e["seq"]) for e in page.events)
            cursor = page.cursor
            if finished and not page.events:
                return seen
            assert loop.time() < deadline, f"a follower saw only {len(seen)} events"
            if not page.events:
                await follower_store.wait_for_events(cursor, 0.5)

    followers = [asyncio.create_task(follower()) for _ in range(FOLLOWERS)]
    await asyncio.gather(*(writer(w) for w in range(WRITERS)))
    done.set()
    views = await asyncio.gather(*followers)
    committed = [
        int(r["seq"])
        for r in await follower_store.all(
            "SELECT seq FROM events WHERE type = 'bench.event' ORDER BY xid, seq"
        )
    ]
    assert len(committed) == EVENTS
    for view in views:
        assert len(view) == len(set(view)), "a follower saw an event twice"
        assert view == committed  # every event, once, in the one order all followers share
    # the order is not seq order: commits overtook each other, and no follower skipped the late ones
    assert committed != sorted(committed)


async def _statement_stats(store: Any) -> dict[str, int]:
    rows = await store.all(
        "SELECT s.query, s.calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid"
        " WHERE d.datname = current_database()"
    )
    out: dict[str, int] = {}
    for r in rows:
        out[str(r["query"])] = out.get(str(r["query"]), 0) + int(r["calls"])
    return out


async def test_the_task_path_takes_no_fleet_wide_lock_and_commits_at_most_three_times_per_task(
    stores: list[Any],
) -> None:
    """Submit; lease into running; complete: each task commits three times, takes no advisory lock, and
    the statements per task stay few. Two Hubs lease side by side, as a fleet does."""
    hub_a, hub_b = stores[0], stores[1]
    await hub_a.write(lambda tx: tx.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"))
    dep = await hub_a.write(lambda tx: add_deployment(tx))
    await hub_a.scalar("SELECT pg_stat_statements_reset() IS NULL")
    before = await _statement_stats(hub_a)

    async def one_task(i: int) -> None:
        hub = (hub_a, hub_b)[i % 2]
        await hub.write(partial(q.submit_task, t=new_task(dep, f"t{i}")))

    await asyncio.gather(*(one_task(i) for i in range(TASKS)))

    async def lease_and_complete(hub: Any, nest: str) -> int:
        done = 0
        while True:
            rows = await hub.write(
                partial(
                    lease_for_nest,
                    deployment_id=dep,
                    nest_id=nest,
                    instance_id=None,
                    limit=1,
                    lease_ms=600_000,
                )
            )
            if not rows:
                return done
            leased = rows[0]
            await hub.write(
                partial(
                    complete_from_nest,
                    task_id=leased.task.id,
                    lease_id=leased.lease_id,
                    status="succeeded",
                    outcome={"status": "succeeded"},
                )
            )
            done += 1

    finished = await asyncio.gather(
        lease_and_complete(hub_a, "n1"), lease_and_complete(hub_b, "n2")
    )
    assert sum(finished) == TASKS
    after = await _statement_stats(hub_a)
    calls = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0) > 0}
    # the two last empty leases also committed; the statistics' own reads are not the task path
    path = {k: v for k, v in calls.items() if "pg_stat_statements" not in k}
    advisory = {k: v for k, v in path.items() if re.search(r"pg_advisory\w*lock", k)}
    assert advisory == {}, f"advisory locks on the task path: {advisory}"
    commits = path.get("COMMIT", 0) - 2
    assert commits <= 3 * TASKS, f"{commits / TASKS:.2f} commits per task"
    statements = sum(v for k, v in path.items() if k not in ("BEGIN", "COMMIT", "ROLLBACK")) / TASKS
    assert statements <= 15, f"{statements:.1f} statements per task: {path}"


async def test_two_submits_with_one_idempotency_key_at_once_make_one_task(
    stores: list[Any], pg_url: str
) -> None:
    """The key is looked up, then inserted: the second submit waits on the key (not on the fleet) and
    returns the first one's task instead of failing on the unique index."""
    import threading

    import psycopg

    hub_a, hub_b = stores[0], stores[1]
    dep = await hub_a.write(lambda tx: add_deployment(tx))
    submitted, release = threading.Event(), threading.Event()

    def first(tx: Tx) -> Any:
        got = q.submit_task(tx, new_task(dep, "one", idempotency_key="k"))
        submitted.set()
        assert release.wait(DEADLINE_S)
        return got

    a = asyncio.create_task(hub_a.write(first))
    await asyncio.to_thread(submitted.wait, DEADLINE_S)
    b = asyncio.create_task(
        hub_b.write(partial(q.submit_task, t=new_task(dep, "two", idempotency_key="k")))
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not b.done():  # the second waits for the key while the first is open
        with psycopg.connect(pg_url) as conn:
            row = conn.execute("SELECT COUNT(*) FROM pg_locks WHERE NOT granted").fetchone()
        if row and row[0]:
            break
        assert loop.time() < deadline, "the second submit neither waited nor finished"
        await asyncio.sleep(0.02)
    release.set()
    (task_a, created_a), (task_b, created_b) = await a, await b
    assert created_a and not created_b and task_b.id == task_a.id
    assert await hub_a.scalar("SELECT COUNT(*) FROM tasks") == 1


async def test_an_older_transaction_s_late_event_comes_first_and_holds_back_the_newer_ones(
    stores: list[Any],
) -> None:
    """Transaction A began first and commits last: its event has the highest seq, yet comes first in the
    log, and B's committed events are not shown until A ends, so no follower passes A's event by. The
    tail, the pages and the wait all follow that order."""
    import threading

    from agen.hub.events.log import tail_start

    a_store, b_store = stores[0], stores[1]
    began, b_done = threading.Event(), threading.Event()

    def a(tx: Tx) -> None:
        tx.scalar("SELECT pg_current_xact_id()")  # A's transaction id, older than B's
        began.set()
        assert b_done.wait(DEADLINE_S)
        tx.event("default", "a1")

    def b(tx: Tx) -> None:
        tx.event("default", "b1")
        tx.event("default", "b2")

    first = asyncio.create_task(a_store.write(a))
    await asyncio.to_thread(began.wait, DEADLINE_S)
    await b_store.write(b)
    page = await read_events(b_store, ["default"])
    assert page.events == [] and page.cursor == 0  # B's events wait for A
    b_done.set()
    await first
    page = await read_events(b_store, ["default"])
    assert [e["type"] for e in page.events] == ["a1", "b1", "b2"]
    seqs = {e["type"]: int(e["seq"]) for e in page.events}
    assert seqs["a1"] > seqs["b2"] and page.cursor == seqs["b2"]
    tail = await tail_start(b_store, ["default"], 1)
    assert [e["type"] for e in (await read_events(b_store, ["default"], after=tail)).events] == [
        "b2"
    ]
    assert await tail_start(b_store, ["default"], 3) == 0
    after_a1 = await read_events(b_store, ["default"], after=seqs["a1"])
    assert [e["type"] for e in after_a1.events] == ["b1", "b2"]
    assert await b_store.wait_for_events(seqs["a1"], 60) == seqs["b2"]
    assert await b_store.wait_for_events(seqs["b2"], 0) == seqs["b2"]  # nothing after the head
