"""Queue throughput and scheduler tick time, against the raw SQLite commit rate of the same run.

1. submit -> lease -> mark_running -> complete per task (4 transactions) through the Store,
   with one worker and with 64 concurrent workers (group commit), in tasks/s;
   and the Manager's pattern: 64 submits, one lease_tasks(limit=64, start=True), 64 completes;
2. the raw baseline: plain sqlite3 committing 4-statement transactions on one thread;
3. schedule_tick with 1,000 deployments, 10 Nests and 100,000 unfinished tasks: the first tick
   (scales every deployment, writes assignments) and steady ticks (nothing to change).

    python -m scripts.bench.queue_bench [--tasks 4000] [--deployments 1000] [--queue 100000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agen.domain import LeasedTaskRow
from agen.hub import leadership
from agen.hub import queue as q
from agen.hub.leader.scheduler import schedule_tick
from agen.store import SQLiteStore, Tx, dumps, new_ulid
from scripts.bench._util import machine
from scripts.bench.store_bench import raw_sqlite

DIGEST = "sha256:" + "0" * 64


def _deployment(tx: Tx, name: str, scale: dict[str, Any]) -> str:
    tx.execute(
        "INSERT OR IGNORE INTO definitions (id, name, digest, files, size, created_ms) VALUES (?,?,?,?,?,?)",
        (f"bench@{DIGEST}", "bench", DIGEST, b"", 0, tx.now_ms),
    )
    dep = new_ulid()
    tx.execute(
        "INSERT INTO deployments (id, namespace, name, kind, definition_id, digest, scale, last_activity_ms,"
        " created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (
            dep,
            "bench",
            name,
            "pool",
            f"bench@{DIGEST}",
            DIGEST,
            dumps(scale),
            tx.now_ms,
            tx.now_ms,
            tx.now_ms,
        ),
    )
    return dep


async def task_rate(path: Path, n: int, workers: int) -> float:
    store = await SQLiteStore.open(path)
    dep = await store.write(lambda tx: _deployment(tx, "d", {"min": 0, "max": 64}))
    per = n // workers

    async def worker(w: int) -> None:
        for i in range(per):
            t = q.NewTask(namespace="bench", deployment_id=dep, deployment="d", input=f"{w}.{i}")
            await store.write(lambda tx, t=t: q.submit_task(tx, t))  # type: ignore[misc]
            got = await store.write(
                lambda tx: q.lease_tasks(
                    tx,
                    deployment_id=dep,
                    nest_id="n",
                    instance_id=f"i{w}",
                    limit=1,
                    lease_ms=60_000,
                )
            )
            for g in got:
                await store.write(lambda tx, g=g: q.mark_running(tx, g.task.id, g.lease_id))  # type: ignore[misc]
                await store.write(
                    lambda tx, g=g: q.complete_task(  # type: ignore[misc]
                        tx, g.task.id, g.lease_id, status="succeeded", outcome={"status": "done"}
                    )
                )

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(workers)))
    dt = time.perf_counter() - t0
    left = await store.scalar("SELECT COUNT(*) FROM tasks WHERE state != 'succeeded'")
    await store.close()
    if left:
        raise SystemExit(f"bench bug: {left} tasks did not finish")
    return per * workers / dt


async def batched_rate(path: Path, n: int, batch: int) -> float:
    """A Manager's pattern: tasks arrive concurrently, one lease (start=True) takes up to ``batch``."""
    store = await SQLiteStore.open(path)
    dep = await store.write(lambda tx: _deployment(tx, "d", {"min": 0, "max": 64}))

    async def submit(i: int) -> None:
        t = q.NewTask(namespace="bench", deployment_id=dep, deployment="d", input=str(i))
        await store.write(lambda tx: q.submit_task(tx, t))

    async def run(g: LeasedTaskRow) -> None:
        await store.write(
            lambda tx: q.complete_task(
                tx, g.task.id, g.lease_id, status="succeeded", outcome={"status": "done"}
            )
        )

    t0 = time.perf_counter()
    for r in range(n // batch):
        await asyncio.gather(*(submit(r * batch + i) for i in range(batch)))
        got = await store.write(
            lambda tx: q.lease_tasks(
                tx,
                deployment_id=dep,
                nest_id="n",
                instance_id="i",
                limit=batch,
                lease_ms=60_000,
                start=True,
            )
        )
        await asyncio.gather(*(run(g) for g in got))
    dt = time.perf_counter() - t0
    await store.close()
    return (n // batch) * batch / dt


def _populate(tx: Tx, deployments: int, queue: int, nests: int) -> None:
    per = queue // deployments
    now = tx.now_ms
    for i in range(nests):
        tx.execute(
            "INSERT INTO nests (id, name, labels, capacity, last_heartbeat_ms, created_ms) VALUES (?,?,?,?,?,?)",
            (new_ulid(), f"nest{i}", "{}", 0 if i % 2 else 2_000, now + 10**9, now),
        )
    seq = 0
    for d in range(deployments):
        dep = _deployment(
            tx,
            f"d{d}",
            {"min": 0, "max": 8, "target_queue_per_instance": 10 + d % 20, "reserve": d % 3},
        )
        rows = []
        for k in range(per):
            seq += 1
            state = "running" if k % 10 == 0 else "queued"
            rows.append(
                (
                    new_ulid(),
                    "bench",
                    dep,
                    f"d{d}",
                    state,
                    "x",
                    k % 4,
                    f"api:c{k % 7}" if k % 2 else None,
                    None if k % 5 else now + 3_600_000,
                    "n" if state == "running" else None,
                    now + 600_000 if state == "running" else None,
                    new_ulid() if state == "running" else None,
                    seq,
                    seq,
                    now,
                    now,
                )
            )
        tx.executemany(
            "INSERT INTO tasks (id, namespace, deployment_id, deployment, state, input, priority, conversation_key,"
            " not_before_ms, lease_nest_id, lease_expires_ms, lease_id, root_task_id, seq, created_ms, updated_ms)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?||'',?,?,?)",
            rows,
        )


async def tick_times(path: Path, deployments: int, queue: int, rounds: int = 5) -> dict[str, float]:
    store = await SQLiteStore.open(path)
    await store.write(lambda tx: _populate(tx, deployments, queue, 10))
    epoch = await store.write(
        lambda tx: leadership.acquire_or_renew(tx, leadership.HUB_LEADER, "bench", 600_000)
    )
    assert epoch is not None

    async def one() -> tuple[float, Any]:
        t0 = time.perf_counter()
        s = await store.write(
            lambda tx: schedule_tick(
                tx, leader_name=leadership.HUB_LEADER, leader_epoch=epoch, now_ms=tx.now_ms
            )
        )
        return (time.perf_counter() - t0) * 1000, s

    first, summary = await one()
    steady = [(await one())[0] for _ in range(rounds)]
    counts_ms = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        await store.write(lambda tx: q.queue_counts(tx))
        counts_ms.append((time.perf_counter() - t0) * 1000)
    lease_ms = []
    deps = [r["id"] for r in await store.all("SELECT id FROM deployments LIMIT 50")]
    for dep in deps:
        t0 = time.perf_counter()
        await store.write(
            lambda tx, dep=dep: q.lease_tasks(  # type: ignore[misc]
                tx, deployment_id=dep, nest_id="n", instance_id="i", limit=4, lease_ms=60_000
            )
        )
        lease_ms.append((time.perf_counter() - t0) * 1000)
    await store.close()
    return {
        "first_tick_ms": round(first, 1),
        "scaled": len(summary.scaled),
        "assignments_written": summary.assignments_changed,
        "steady_tick_ms": round(statistics.median(steady), 1),
        "queue_counts_ms": round(statistics.median(counts_ms), 1),
        "lease_4_of_100_ms": round(statistics.median(lease_ms), 2),
    }


def run(tasks: int, deployments: int, queue: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        raw = raw_sqlite(Path(d) / "raw.db", tasks, "NORMAL")
        one = asyncio.run(task_rate(Path(d) / "q1.db", tasks // 4, 1))
        many = asyncio.run(task_rate(Path(d) / "q64.db", tasks, 64))
        batched = asyncio.run(batched_rate(Path(d) / "qb.db", tasks, 64))
        ticks = asyncio.run(tick_times(Path(d) / "tick.db", deployments, queue))
    return {
        "name": "queue",
        "machine": machine(),
        "tasks": tasks,
        "raw_sqlite_tx_per_s": round(raw),
        "queue_1_worker_tasks_per_s": round(one),
        "queue_64_workers_tasks_per_s": round(many),
        "ratio_64_workers_tasks_vs_raw_tx": round(many / raw, 2),
        "queue_batched_64_tasks_per_s": round(batched),
        "ratio_batched_tasks_vs_raw_tx": round(batched / raw, 2),
        "tick": {"deployments": deployments, "unfinished_tasks": queue, "nests": 10, **ticks},
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tasks", type=int, default=4000)
    ap.add_argument("--deployments", type=int, default=1000)
    ap.add_argument("--queue", type=int, default=100_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    r = run(args.tasks, args.deployments, args.queue)
    if args.json:
        print(json.dumps(r))
        return
    t = r["tick"]
    print(f"queue bench on {r['machine']}")
    print(f"  raw sqlite3 4-statement commits (baseline): {r['raw_sqlite_tx_per_s']:>7} tx/s")
    print(
        f"  submit+lease+run+complete, 1 worker:        {r['queue_1_worker_tasks_per_s']:>7} tasks/s"
    )
    print(
        f"  submit+lease+run+complete, 64 workers:      {r['queue_64_workers_tasks_per_s']:>7} tasks/s"
        f"  ({r['ratio_64_workers_tasks_vs_raw_tx']}x the raw tx rate; 4 tx per task)"
    )
    print(
        f"  submit x64, one lease(start) of 64, complete:{r['queue_batched_64_tasks_per_s']:>7} tasks/s"
        f"  ({r['ratio_batched_tasks_vs_raw_tx']}x the raw tx rate)"
    )
    print(
        f"  schedule_tick, {t['deployments']} deployments / {t['unfinished_tasks']} tasks / {t['nests']} Nests:"
        f" first {t['first_tick_ms']} ms ({t['scaled']} scaled, {t['assignments_written']} assignments),"
        f" steady {t['steady_tick_ms']} ms"
    )
    print(
        f"  queue_counts alone: {t['queue_counts_ms']} ms; lease 4 of a 100-task queue: {t['lease_4_of_100_ms']} ms"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
