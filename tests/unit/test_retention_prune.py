"""``agen up --retention``: old spans, log lines, trigger events and replay cassettes go; failures are logged."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agen.errors import UnavailableError
from agen.runner.records import save_cassette
from agen.store import SQLiteStore, Store, Tx
from agen.up import _prune, prune_expired

T = TypeVar("T")
HOUR_MS = 3_600_000


async def test_retention_prunes_replay_cassettes_older_than_it_and_keeps_newer_ones(
    store: Store,
) -> None:
    for run_id in ("old-run", "new-run"):
        await store.write(
            partial(
                save_cassette,
                run_id=run_id,
                namespace="default",
                deployment="d",
                digest=None,
                interactions=[{"turn": 0}],
            )
        )
    await store.write(
        lambda tx: tx.execute(
            "UPDATE cassettes SET created_ms = ?, updated_ms = ? WHERE run_id = 'old-run'",
            (tx.now_ms - 3 * HOUR_MS, tx.now_ms - 2 * HOUR_MS),
        )
    )
    await store.write(lambda tx: prune_expired(tx, HOUR_MS))
    assert [r["run_id"] for r in await store.all("SELECT run_id FROM cassettes")] == ["new-run"]


class _FlakyStore(SQLiteStore):
    """A real store whose first writes fail as a full disk would; counts every attempt."""

    def __init__(self, path: Path, fail: int) -> None:
        super().__init__(path)
        self.fail = fail
        self.attempts = 0
        self.enough = asyncio.Event()

    async def write(self, fn: Callable[[Tx], T]) -> T:
        self.attempts += 1
        if self.attempts >= 6:
            self.enough.set()
        if self.attempts <= self.fail:
            raise UnavailableError("the disk is full")
        return await super().write(fn)


async def test_a_failing_pruner_logs_once_when_it_fails_and_once_when_it_recovers_and_stops_on_cancel(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store: Any = await _FlakyStore.open(tmp_path / "a.db", fail=3)
    try:
        with caplog.at_level(logging.WARNING, logger="agen.up"):
            pruner = asyncio.create_task(_prune(store, HOUR_MS, every_s=0))
            await asyncio.wait_for(store.enough.wait(), 30)
            pruner.cancel()
            with pytest.raises(asyncio.CancelledError):
                await pruner
        lines = [r.getMessage() for r in caplog.records if r.name == "agen.up"]
        assert len(lines) == 2, lines
        assert "retention pruning failed" in lines[0] and "the disk is full" in lines[0]
        assert "works again" in lines[1]
    finally:
        await store.close()
