"""A peer on the same work: huey (SqliteHuey) running N no-op tasks, enqueue -> result.

What someone would pick instead of agen for "a durable task queue on one machine with SQLite".
huey's consumer runs in this process with thread workers polling its SQLite queue (poll delay
1 ms -> 10 ms, so polling does not dominate); each task returns the time it ran, so latency is
enqueue -> run end. Baseline in the same run: raw sqlite3 commits/s on the same disk.
Needs the bench extra: pip install -e ".[bench]".

    python -m scripts.bench.peer_bench [--n 2000] [--workers 4] [--json]
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


def run(n: int = 2000, workers: int = 4) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        raw = raw_commits(Path(d) / "raw.db")
        h = huey_run(Path(d) / "huey.db", n, workers)
    return {
        "name": "peer_huey",
        "machine": machine(),
        "raw_sqlite_commits_per_s": round(raw),
        "huey": h,
        "huey_vs_raw_commits": round(h["tasks_per_s"] / raw, 3),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    r = run(args.n, args.workers)
    if args.json:
        print(json.dumps(r))
        return
    h = r["huey"]
    print(
        f"huey SqliteHuey, {h['workers']} thread workers: {h['tasks_per_s']} tasks/s "
        f"(p50 {h['p50_ms']} ms, p95 {h['p95_ms']} ms); raw SQLite {r['raw_sqlite_commits_per_s']} commits/s"
    )


if __name__ == "__main__":
    main()
