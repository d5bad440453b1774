"""Hub leadership: two Hubs on one store file never both lead, and a stale leader is fenced."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from agen.errors import FencedError
from agen.hub import leadership
from agen.hub.leader.scheduler import schedule_tick
from agen.store import SQLiteStore, Tx
from tests.unit.queue_helpers import add_deployment, add_nest

TTL_MS = 40


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def test_two_hubs_on_one_file_never_both_believe_they_lead(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    SQLiteStore.open_sync(path).close_sync()  # migrate once
    beliefs: dict[str, list[tuple[int, int, int]]] = {"a": [], "b": []}
    errors: list[BaseException] = []

    def hub(name: str, seed: int) -> None:
        rng = random.Random(seed)
        store = SQLiteStore.open_sync(path)
        try:
            for _ in range(120):
                before = wall_ms()  # the term counts from before the write was sent
                epoch = store.write_sync(
                    lambda tx: leadership.acquire_or_renew(tx, leadership.HUB_LEADER, name, TTL_MS)
                )
                after = wall_ms()
                if epoch is not None and after < before + TTL_MS:
                    beliefs[name].append((after, before + TTL_MS, epoch))
                # mostly renew in time; sometimes stall past the TTL (a GC pause, a stopped VM)
                time.sleep(rng.choice([0.0, 0.005, 0.01, 0.02, 0.06]))
        except BaseException as e:  # surfaced in the main thread
            errors.append(e)
        finally:
            store.close_sync()

    threads = [threading.Thread(target=hub, args=(n, i)) for i, n in enumerate(beliefs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert beliefs["a"] and beliefs["b"], "both Hubs should have led at some point"
    for a_start, a_end, a_epoch in beliefs["a"]:
        for b_start, b_end, b_epoch in beliefs["b"]:
            assert a_end <= b_start or b_end <= a_start, (
                a_start,
                a_end,
                a_epoch,
                b_start,
                b_end,
                b_epoch,
            )
            assert a_epoch != b_epoch
    epochs = sorted({e for v in beliefs.values() for _, _, e in v})
    assert len(epochs) >= 2


def test_taking_over_an_expired_lease_increments_the_epoch(tmp_path: Path) -> None:
    store = SQLiteStore.open_sync(tmp_path / "l.db")
    try:

        def acq(holder: str, ttl: int = 60_000) -> int | None:
            return store.write_sync(lambda tx: leadership.acquire_or_renew(tx, "x", holder, ttl))

        assert acq("a") == 1
        assert acq("a") == 1  # renewal keeps the term
        assert acq("b") is None  # live lease held by someone else
        store.write_sync(lambda tx: leadership.step_down(tx, "x", "a"))
        assert acq("b") == 2
        store.write_sync(lambda tx: leadership.check_epoch(tx, "x", 2))
        with pytest.raises(FencedError, match="leader epoch 1"):
            store.write_sync(lambda tx: leadership.check_epoch(tx, "x", 1))
    finally:
        store.close_sync()


def test_stale_leader_assignment_write_is_refused_after_a_pause(tmp_path: Path) -> None:
    path = tmp_path / "two.db"
    hub_a, hub_b = SQLiteStore.open_sync(path), SQLiteStore.open_sync(path)
    try:
        hub_a.write_sync(lambda tx: add_deployment(tx, desired=1, scale={"min": 1, "max": 1}))
        hub_a.write_sync(lambda tx: add_nest(tx, "n"))
        epoch_a = hub_a.write_sync(
            lambda tx: leadership.acquire_or_renew(tx, leadership.HUB_LEADER, "a", TTL_MS)
        )
        assert epoch_a is not None
        time.sleep(TTL_MS / 1000 * 2)  # hub a stalls past its lease
        epoch_b = hub_b.write_sync(
            lambda tx: leadership.acquire_or_renew(tx, leadership.HUB_LEADER, "b", 60_000)
        )
        assert epoch_b == epoch_a + 1

        def tick(epoch: int) -> object:
            return lambda tx: schedule_tick(
                tx, leader_name=leadership.HUB_LEADER, leader_epoch=epoch, now_ms=tx.now_ms
            )

        with pytest.raises(FencedError):
            hub_a.write_sync(tick(epoch_a))  # type: ignore[arg-type]
        assert (
            hub_a.write_sync(
                lambda tx: leadership.acquire_or_renew(tx, leadership.HUB_LEADER, "a", TTL_MS)
            )
            is None
        )
        hub_b.write_sync(tick(epoch_b))  # type: ignore[arg-type]

        def rows(tx: Tx) -> list[int]:
            return [r["leader_epoch"] for r in tx.all("SELECT leader_epoch FROM assignments")]

        assert hub_b.write_sync(rows) == [epoch_b]
    finally:
        hub_a.close_sync()
        hub_b.close_sync()
