"""Placement of instances on Nests and the leader's scheduler tick on a real store."""

from __future__ import annotations

from typing import Any

import pytest

from agen.hub import leadership
from agen.hub import queue as q
from agen.hub.leader.scheduler import Demand, NestView, place, schedule_tick
from agen.store import Store, Tx
from tests.unit.queue_helpers import add_deployment, add_nest, new_task

GPU = {"gpu": "yes"}


def test_missing_instances_go_to_the_nest_with_most_free_capacity() -> None:
    nests = [NestView("a", {}, 4), NestView("b", {}, 10), NestView("c", {}, 2)]
    got = place([Demand("d", 5, {})], nests, {})
    assert got.counts == {("d", "b"): 5} and not got.unplaced  # b stays the freest throughout
    spread = place([Demand("d", 3, {})], [NestView("a", {}, 4), NestView("b", {}, 5)], {})
    assert spread.counts == {("d", "b"): 2, ("d", "a"): 1}


def test_existing_instances_stay_and_surplus_leaves_the_most_loaded_nest_first() -> None:
    nests = [NestView("a", {}, 4), NestView("b", {}, 4)]
    current = {("d", "a"): 2, ("d", "b"): 2, ("e", "a"): 2}
    got = place([Demand("d", 3, {}), Demand("e", 2, {})], nests, current)
    assert got.counts == {("d", "a"): 1, ("d", "b"): 2, ("e", "a"): 2}
    grown = place([Demand("d", 5, {}), Demand("e", 2, {})], nests, current)
    assert grown.counts[("d", "a")] == 2 and grown.counts[("d", "b")] == 3


def test_placement_respects_labels_and_reports_what_fits_nowhere() -> None:
    nests = [NestView("cpu", {}, 0), NestView("gpu1", GPU, 1)]
    got = place([Demand("train", 3, GPU), Demand("web", 2, {})], nests, {("train", "cpu"): 1})
    assert got.counts[("train", "gpu1")] == 1 and ("train", "cpu") not in got.counts
    assert got.unplaced == {"train": 2} and got.full_nests == {"train": {"gpu1"}}
    assert got.counts[("web", "cpu")] == 2  # unlimited capacity


def test_instances_are_shared_round_robin_when_capacity_is_short() -> None:
    got = place([Demand("a", 3, {}), Demand("b", 3, {})], [NestView("n", {}, 4)], {})
    assert got.counts == {("a", "n"): 2, ("b", "n"): 2} and got.unplaced == {"a": 1, "b": 1}


async def lead(store: Store, holder: str = "hub-a", ttl_ms: int = 60_000) -> int:
    epoch = await store.write(
        lambda tx: leadership.acquire_or_renew(tx, leadership.HUB_LEADER, holder, ttl_ms)
    )
    assert epoch is not None
    return epoch


async def tick(store: Store, epoch: int, now_ms: int | None = None, **kw: Any):  # type: ignore[no-untyped-def]
    return await store.write(
        lambda tx: schedule_tick(
            tx,
            leader_name=leadership.HUB_LEADER,
            leader_epoch=epoch,
            now_ms=tx.now_ms if now_ms is None else now_ms,
            **kw,
        )
    )


def assignments(tx: Tx) -> dict[tuple[str, str], int]:
    return {
        (r["deployment_id"], r["nest_id"]): r["count"]
        for r in tx.all("SELECT deployment_id, nest_id, count FROM assignments")
    }


async def test_tick_scales_up_for_queued_work_and_writes_assignments(store: Store) -> None:
    dep = await store.write(lambda tx: add_deployment(tx, scale={"min": 0, "max": 4}))
    nest = await store.write(lambda tx: add_nest(tx, "n1", capacity=8))
    for _ in range(3):
        await store.write(lambda tx: q.submit_task(tx, new_task(dep)))
    epoch = await lead(store)
    s = await tick(store, epoch)
    assert s.scaled == {dep: (0, 3)}
    assert await store.write(assignments) == {(dep, nest): 3}
    row = await store.one("SELECT leader_epoch FROM assignments")
    assert row == {"leader_epoch": epoch}
    again = await tick(store, epoch)
    assert again.scaled == {} and again.assignments_changed == 0
    ev = await store.one("SELECT data FROM events WHERE type = 'deployment.scaled'")
    assert ev is not None and '"reason":"up"' in ev["data"]


async def test_tick_scales_down_after_idle_timeout(store: Store) -> None:
    dep = await store.write(
        lambda tx: add_deployment(
            tx, scale={"min": 0, "max": 4, "idle_timeout_ms": 60_000}, desired=3
        )
    )
    nest = await store.write(lambda tx: add_nest(tx, "n1", heartbeat_ms=10**13))
    epoch = await lead(store)
    now = await store.write(lambda tx: tx.now_ms)
    assert (await tick(store, epoch, now)).scaled == {}
    assert await store.write(assignments) == {(dep, nest): 3}
    s = await tick(store, epoch, now + 60_000)
    assert s.scaled == {dep: (3, 0)} and await store.write(assignments) == {}


async def test_paused_deployment_goes_to_zero(store: Store) -> None:
    dep = await store.write(
        lambda tx: add_deployment(tx, desired=2, paused=True, scale={"min": 1, "max": 4})
    )
    await store.write(lambda tx: add_nest(tx, "n1"))
    s = await tick(store, await lead(store))
    assert s.scaled == {dep: (2, 0)}


async def test_silent_nest_is_lost_its_assignments_move_and_leases_expire(store: Store) -> None:
    dep = await store.write(lambda tx: add_deployment(tx, scale={"min": 1, "max": 1}, desired=1))
    now = await store.write(lambda tx: tx.now_ms)
    old = await store.write(lambda tx: add_nest(tx, "old", heartbeat_ms=now))
    epoch = await lead(store)
    await tick(store, epoch, now)
    assert await store.write(assignments) == {(dep, old): 1}
    await store.write(lambda tx: q.submit_task(tx, new_task(dep)))
    [t] = await store.write(
        lambda tx: q.lease_tasks(
            tx, deployment_id=dep, nest_id=old, instance_id="i", limit=1, lease_ms=600_000
        )
    )
    fresh = await store.write(lambda tx: add_nest(tx, "fresh", heartbeat_ms=now + 40_000))
    s = await tick(store, epoch, now + 31_000)
    assert s.nests_lost == [old] and s.requeued == [t.task.id]
    assert await store.write(assignments) == {(dep, fresh): 1}
    assert (await store.one("SELECT state FROM nests WHERE id = ?", (old,))) == {"state": "lost"}
    assert (await store.one("SELECT state FROM tasks WHERE id = ?", (t.task.id,))) == {
        "state": "queued"
    }


async def test_capacity_pressure_scales_an_idle_holder_down_to_make_room(store: Store) -> None:
    now = await store.write(lambda tx: tx.now_ms)
    idle = await store.write(
        lambda tx: add_deployment(
            tx, "idle", scale={"min": 0, "max": 2}, desired=2, last_activity_ms=now - 120_000
        )
    )
    busy = await store.write(lambda tx: add_deployment(tx, "busy", scale={"min": 0, "max": 2}))
    nest = await store.write(lambda tx: add_nest(tx, "small", capacity=2, heartbeat_ms=now + 10**9))
    epoch = await lead(store)
    await tick(store, epoch, now)
    assert await store.write(assignments) == {(idle, nest): 2}
    await store.write(lambda tx: q.submit_task(tx, new_task(busy, name="busy")))
    s = await tick(store, epoch, now + 1000)
    assert s.scaled == {busy: (0, 1), idle: (2, 0)}
    assert await store.write(assignments) == {(busy, nest): 1}


async def test_stale_leader_tick_is_refused(store: Store) -> None:
    await store.write(lambda tx: add_deployment(tx, desired=1, scale={"min": 1, "max": 1}))
    await store.write(lambda tx: add_nest(tx, "n1"))
    old = await lead(store, "hub-a", ttl_ms=1)
    await store.write(lambda tx: tx.execute("UPDATE leases SET expires_ms = 0"))
    new = await lead(store, "hub-b")
    assert new == old + 1
    from agen.errors import FencedError

    with pytest.raises(FencedError, match=f"leader epoch {old}"):
        await tick(store, old)
    assert await store.scalar("SELECT COUNT(*) FROM assignments") == 0
    await tick(store, new)
    assert await store.scalar("SELECT leader_epoch FROM assignments") == new
