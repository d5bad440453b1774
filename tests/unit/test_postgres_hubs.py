"""Several Hubs on one Postgres database: wake-ups cross processes (LISTEN/NOTIFY) and leadership stays
with one Hub at a time. Each PostgresStore here stands for one process: its own pool and listener."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import AsyncIterator

import pytest

from agen.hub import leadership
from agen.hub.service import Hub
from agen.store.postgres import PostgresStore

TTL_MS = 40


@pytest.fixture
async def two(pg_url: str) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    a, b = await PostgresStore.open(pg_url), await PostgresStore.open(pg_url)
    yield a, b
    await a.close()
    await b.close()


async def test_work_made_by_one_hub_wakes_the_hub_of_another_process_on_the_database(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    hub_a, hub_b = Hub(two[0]), Hub(two[1])
    seen_a, seen_b = hub_a.work.generation, hub_b.work.generation
    hub_a.desired_state_changed()  # a submit, a deploy, an approval on Hub a
    assert await hub_b.work.wait(seen_b, 30) == seen_b + 1  # Hub b's leasing loop wakes
    assert hub_b.scheduler_kick.is_set()  # and its leader loop ticks, if it leads
    # b answers; by the time b's wake-up reaches a, so has a's own NOTIFY (sent first), which a passed over
    hub_b.desired_state_changed()
    assert await hub_a.work.wait(seen_a + 1, 30) == seen_a + 2


async def test_two_hubs_on_one_postgres_database_never_both_believe_they_lead(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    beliefs: dict[str, list[tuple[int, int, int]]] = {"a": [], "b": []}
    errors: list[BaseException] = []

    def hub(name: str, store: PostgresStore, seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(120):
                before = (
                    time.time_ns() // 1_000_000
                )  # the term counts from before the write was sent
                epoch = store.write_sync(
                    lambda tx: leadership.acquire_or_renew(tx, leadership.HUB_LEADER, name, TTL_MS)
                )
                after = time.time_ns() // 1_000_000
                if epoch is not None and after < before + TTL_MS:
                    beliefs[name].append((after, before + TTL_MS, epoch))
                time.sleep(rng.choice([0.0, 0.005, 0.01, 0.02, 0.06]))  # sometimes past the TTL
        except BaseException as e:
            errors.append(e)

    threads = [
        threading.Thread(target=hub, args=(n, s, i))
        for i, (n, s) in enumerate(zip(beliefs, two, strict=True))
    ]

    def run_all() -> None:
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    await asyncio.to_thread(run_all)
    assert not errors
    assert beliefs["a"] and beliefs["b"], "both Hubs should have led at some point"
    for a_start, a_end, a_epoch in beliefs["a"]:
        for b_start, b_end, b_epoch in beliefs["b"]:
            assert a_end <= b_start or b_end <= a_start
            assert a_epoch != b_epoch


async def test_a_stale_leaders_scheduler_write_is_refused_after_another_hub_took_over(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    from agen.errors import FencedError
    from agen.hub.leader.scheduler import schedule_tick
    from agen.store import Tx, now_ms
    from tests.unit.queue_helpers import add_deployment, add_nest

    hub_a, hub_b = two
    await hub_a.write(lambda tx: add_deployment(tx, desired=1, scale={"min": 1, "max": 1}))
    await hub_a.write(lambda tx: add_nest(tx, "n"))
    epoch_a = await hub_a.write(
        lambda tx: leadership.acquire_or_renew(tx, leadership.HUB_LEADER, "a", 60_000)
    )
    assert epoch_a is not None
    # hub a stalls past its lease (a GC pause, a stopped VM): its row is as the TTL leaves it
    await hub_a.write(lambda tx: tx.execute("UPDATE leases SET expires_ms = ?", (now_ms() - 1,)))
    epoch_b = await hub_b.write(
        lambda tx: leadership.acquire_or_renew(tx, leadership.HUB_LEADER, "b", 60_000)
    )
    assert epoch_b == epoch_a + 1

    def tick(epoch: int) -> object:
        return lambda tx: schedule_tick(
            tx, leader_name=leadership.HUB_LEADER, leader_epoch=epoch, now_ms=tx.now_ms
        )

    with pytest.raises(FencedError, match=f"leader epoch {epoch_a}"):
        await hub_a.write(tick(epoch_a))  # type: ignore[arg-type]
    assert (
        await hub_a.write(
            lambda tx: leadership.acquire_or_renew(tx, leadership.HUB_LEADER, "a", 60_000)
        )
        is None
    )
    await hub_b.write(tick(epoch_b))  # type: ignore[arg-type]

    def assigned(tx: Tx) -> int:
        return int(tx.scalar("SELECT COUNT(*) FROM assignments") or 0)

    assert await hub_b.read(assigned) == 1
