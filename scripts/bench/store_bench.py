"""Store write throughput: a 4-statement transaction through the Store vs plain sqlite3.

Baseline (same run, same disk): plain sqlite3 on one thread committing each
4-statement transaction on its own, WAL + synchronous=NORMAL. The Store hands
whole transactions to its writer thread and group-commits the waiting ones.

    python -m scripts.bench.store_bench [--n 4000] [--synchronous NORMAL|FULL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agen.store import SQLiteStore, Tx, new_ulid

DDL = "CREATE TABLE IF NOT EXISTS bench (id TEXT PRIMARY KEY, a INTEGER, b TEXT, c INTEGER)"


def four_statements(tx: Tx, i: int) -> None:
    key = new_ulid()
    tx.execute("INSERT INTO bench (id, a, b, c) VALUES (?, ?, ?, ?)", (key, i, "x" * 64, 0))
    tx.execute("UPDATE bench SET c = c + 1 WHERE id = ?", (key,))
    tx.scalar("SELECT a FROM bench WHERE id = ?", (key,))
    tx.event("bench", "bench.tx", data={"i": i})


def raw_sqlite(path: Path, n: int, synchronous: str) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute(DDL)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS ev (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT, data TEXT)"
    )
    t0 = time.perf_counter()
    for i in range(n):
        key = new_ulid()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO bench (id, a, b, c) VALUES (?, ?, ?, ?)", (key, i, "x" * 64, 0))
        conn.execute("UPDATE bench SET c = c + 1 WHERE id = ?", (key,))
        conn.execute("SELECT a FROM bench WHERE id = ?", (key,)).fetchone()
        conn.execute("INSERT INTO ev (id, data) VALUES (?, ?)", (new_ulid(), json.dumps({"i": i})))
        conn.execute("COMMIT")
    dt = time.perf_counter() - t0
    conn.close()
    return n / dt


async def store_rate(path: Path, n: int, callers: int, synchronous: str) -> tuple[float, float]:
    """(transactions/s wall, CPU µs of this process per transaction, both threads)."""
    store = await SQLiteStore.open(path, synchronous=synchronous)
    await store.write(lambda tx: tx.execute(DDL))
    per = n // callers

    async def caller(c: int) -> None:
        for i in range(per):
            await store.write(lambda tx, i=i: four_statements(tx, c * per + i))

    c0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(caller(c) for c in range(callers)))
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    await store.close()
    return per * callers / dt, cpu / (per * callers) * 1e6


def run(n: int = 4000, synchronous: str = "NORMAL") -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        raw = raw_sqlite(Path(d) / "raw.db", n, synchronous)
        one, one_cpu = asyncio.run(store_rate(Path(d) / "s1.db", n, 1, synchronous))
        many, _ = asyncio.run(store_rate(Path(d) / "s64.db", n, 64, synchronous))
    return {
        "name": "store_write",
        "synchronous": synchronous,
        "transactions": n,
        "raw_sqlite_tx_per_s": round(raw),
        "store_1_caller_tx_per_s": round(one),
        "store_64_callers_tx_per_s": round(many),
        # The 1-caller wall rate waits on two thread wake-ups per transaction, so it follows the
        # machine's load; the CPU it costs does not (docs/performance.md, "What the figures mean").
        "store_1_caller_cpu_us_per_tx": round(one_cpu),
        "ratio_1_caller_vs_raw": round(one / raw, 2),
        "ratio_64_callers_vs_raw": round(many / raw, 2),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--synchronous", default="NORMAL")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    r = run(args.n, args.synchronous)
    if args.json:
        print(json.dumps(r))
        return
    print(
        f"store write, 4-statement transaction, synchronous={r['synchronous']}, n={r['transactions']}"
    )
    print(f"  raw sqlite3, one thread (baseline): {r['raw_sqlite_tx_per_s']:>8} tx/s")
    print(
        f"  Store, 1 caller:                    {r['store_1_caller_tx_per_s']:>8} tx/s  ({r['ratio_1_caller_vs_raw']}x raw)"
    )
    print(f"  Store, 1 caller, CPU per tx:        {r['store_1_caller_cpu_us_per_tx']:>8} us")
    print(
        f"  Store, 64 callers (group commit):   {r['store_64_callers_tx_per_s']:>8} tx/s  ({r['ratio_64_callers_vs_raw']}x raw)"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
