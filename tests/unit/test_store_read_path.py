"""The SQLite Store has one read path: reader threads on read-only sqlite3 connections, for single
statements and for read functions alike (no second library, no second pool)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agen.store import Tx
from agen.store.sqlite import SQLiteStore

PROBE = """
import asyncio, sys
from agen.store.sqlite import SQLiteStore

async def main(path):
    store = await SQLiteStore.open(path)
    await store.write(lambda tx: tx.event("default", "probe.one"))
    rows = await store.all("SELECT type FROM events WHERE type = 'probe.one'")
    snap = await store.read(lambda tx: tx.all("SELECT type FROM events"))
    await store.close()
    assert rows == [{"type": "probe.one"}] and snap, (rows, snap)
    print(sorted(m for m in sys.modules if m.split(".")[0] in ("aiosqlite", "concurrent")))

asyncio.run(main(sys.argv[1]))
"""


def test_single_statements_and_read_functions_share_one_reader_path(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "r.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "aiosqlite" not in done.stdout


async def test_a_read_function_sees_one_snapshot_and_single_reads_see_each_commit(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "s.db")
    try:
        await store.write(lambda tx: tx.event("default", "a.one"))

        def both(tx: Tx) -> tuple[int, int]:
            first = int(tx.scalar("SELECT COUNT(*) FROM events"))
            return first, int(tx.scalar("SELECT COUNT(*) FROM events"))

        first, second = await store.read(both)
        assert first == second >= 1
        await store.write(lambda tx: tx.event("default", "a.two"))
        assert int(await store.scalar("SELECT COUNT(*) FROM events")) == first + 1
    finally:
        await store.close()
