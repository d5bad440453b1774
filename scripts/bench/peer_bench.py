"""Peers on the same work: huey (SqliteHuey) no-op tasks and DBOS one-step workflows, on SQLite.

What someone would pick instead of agen for "a durable task queue on one machine with SQLite".
huey's consumer runs in this process with thread workers polling its SQLite queue (poll delay
1 ms -> 10 ms, so polling does not dominate); each task returns the time it ran, so latency is
enqueue -> run end. DBOS Transact (durable workflows checkpointed in SQLite, the closest peer to
agen's durable runs) runs one-step workflows enqueued on a DBOS queue (polled every 10 ms) and,
for reference, started directly. Baseline in the same run: raw sqlite3 commits/s on the same disk.
Needs the bench extra: pip install -e ".[bench]" (a peer that is not installed is left out).

    python -m scripts.bench.peer_bench [--n 2000] [--dbos-n 500] [--workers 4] [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.bench._util import machine, median, pct
from scripts.bench.task_bench import raw_commits


def huey_run(db: Path, n: int, workers: int) -> dict[str, Any]:
    from huey import SqliteHuey

    huey = SqliteHuey(filename=str(db))

    @huey.task()
    def noop(i: int) -> float:
        return time.time()

    consumer = huey.create_consumer(
        workers=workers,
        worker_type="thread",
        periodic=False,
        initial_delay=0.001,
        backoff=1.15,
        max_delay=0.01,
    )
    consumer.start()  # worker threads; signal handlers need the main thread, so no consumer.run()
    time.sleep(0.2)  # workers up before the first enqueue, as agen's instances are
    t0 = time.perf_counter()
    enqueued: list[tuple[float, Any]] = []
    for i in range(n):
        enqueued.append((time.time(), noop(i)))
    submitted = time.perf_counter() - t0
    lat = []
    for at, result in enqueued:
        done = result.get(blocking=True, timeout=120)
        lat.append((done - at) * 1000)
    elapsed = time.perf_counter() - t0
    consumer.stop(graceful=True)
    return {
        "tasks": n,
        "workers": workers,
        "seconds": round(elapsed, 3),
        "tasks_per_s": round(n / elapsed),
        "submit_per_s": round(n / submitted),
        "p50_ms": round(median(lat), 1),
        "p95_ms": round(pct(lat, 95), 1),
    }


def dbos_run(db: Path, n: int) -> dict[str, Any] | None:
    """n one-step workflows through a DBOS queue on SQLite (enqueue -> result), then n started directly."""
    try:
        from dbos import DBOS
    except ImportError:
        return None
    DBOS(
        config={
            "name": "agenbench",
            "system_database_url": f"sqlite:///{db}",
            "log_level": "WARNING",
        }
    )

    @DBOS.step()
    def stamp(i: int) -> float:
        return time.time()

    @DBOS.workflow()
    def one_step(i: int) -> float:
        return stamp(i)

    DBOS.launch()
    try:
        queue = DBOS.register_queue("agenbench", polling_interval_sec=0.01)
        t0 = time.perf_counter()
        handles = [(time.time(), queue.enqueue(one_step, i)) for i in range(n)]
        submitted = time.perf_counter() - t0
        lat = [(handle.get_result() - at) * 1000 for at, handle in handles]
        queued = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(n):
            one_step(n + i)
        direct = time.perf_counter() - t0
    finally:
        DBOS.destroy()
    return {
        "workflows": n,
        "queued_seconds": round(queued, 3),
        "queued_per_s": round(n / queued, 1),
        "submit_per_s": round(n / submitted),
        "p50_ms": round(median(lat), 1),
        "p95_ms": round(pct(lat, 95), 1),
        "direct_per_s": round(n / direct, 1),
    }


def run(n: int = 2000, workers: int = 4, dbos_n: int = 500) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        raw = raw_commits(Path(d) / "raw.db")
        h = huey_run(Path(d) / "huey.db", n, workers)
        dbos = dbos_run(Path(d) / "dbos.sqlite", dbos_n)
    return {
        "name": "peer_huey",
        "machine": machine(),
        "raw_sqlite_commits_per_s": round(raw),
        "huey": h,
        "huey_vs_raw_commits": round(h["tasks_per_s"] / raw, 3),
        "dbos": dbos,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--dbos-n", type=int, default=500)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    r = run(args.n, args.workers, args.dbos_n)
    if args.json:
        print(json.dumps(r))
        return
    h = r["huey"]
    print(
        f"huey SqliteHuey, {h['workers']} thread workers: {h['tasks_per_s']} tasks/s "
        f"(p50 {h['p50_ms']} ms, p95 {h['p95_ms']} ms); raw SQLite {r['raw_sqlite_commits_per_s']} commits/s"
    )
    b = r["dbos"]
    if b is not None:
        print(
            f"DBOS one-step workflows: {b['queued_per_s']}/s through a queue (p50 {b['p50_ms']} ms), "
            f"{b['direct_per_s']}/s started directly"
        )


if __name__ == "__main__":
    main()
