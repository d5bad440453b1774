"""agen on Postgres beside the Postgres queues users would pick instead: pgqueuer and procrastinate.

One throwaway cluster at initdb's durable defaults (fsync, synchronous_commit, full_page_writes on;
``--fsync-off`` turns them off, labelled), a fresh database per run. Each round runs, one after the
other (interleaved, so a shared machine's load hits them alike): agen's in-process pipeline (Hub + local
Nest, fake model, ``pg_bench.pipeline``), pgqueuer (no-op async jobs, enqueued in one batch, a worker in
drain mode) and procrastinate (no-op async jobs deferred at once, a worker that stops when the queue is
empty). Every run is a process of its own; per job, pg_stat_statements counts statements, commits and
advisory locks on its database. Medians of ``--rounds``.

The peers come from the bench extra (``pip install -e '.[bench]'``); ``--peers-path DIR`` adds a folder
they were installed into with ``pip install --target DIR`` (put on the peer processes' path only). A peer
that is not installed is left out.

    python -m scripts.bench.pg_peers [--n 500] [--rounds 3] [--fsync-off] [--peers-path DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SIDES = ("agen", "pgqueuer", "procrastinate")


async def _agen(url: str, n: int) -> dict[str, Any]:
    import tempfile

    from agen.store.postgres import PostgresStore
    from scripts.bench.pg_bench import pipeline

    os.environ["AGEN_HOME"] = tempfile.mkdtemp(prefix="agen-peers-")
    store = await PostgresStore.open(url, pool_size=8)
    try:
        return await pipeline(store, n)
    finally:
        await store.close()


async def _pgqueuer(url: str, n: int) -> dict[str, Any]:
    from datetime import UTC, datetime

    import psycopg
    from pgqueuer import PgQueuer, PsycopgDriver, Queries
    from pgqueuer.models import Job
    from pgqueuer.types import QueueExecutionMode

    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    driver = PsycopgDriver(conn)
    await Queries(driver).install()
    lat: list[float] = []
    pgq = PgQueuer(driver)

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        lat.append((datetime.now(UTC) - job.created).total_seconds() * 1000)

    t0 = time.perf_counter()
    await Queries(driver).enqueue(["noop"] * n, [None] * n, [0] * n)
    await pgq.run(mode=QueueExecutionMode.drain, batch_size=50)
    seconds = time.perf_counter() - t0
    return _result(n, len(lat), seconds, lat)


async def _procrastinate(url: str, n: int) -> dict[str, Any]:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    lat: list[float] = []

    @app.task(name="noop")
    async def noop(at: float) -> None:
        lat.append((time.time() - at) * 1000)

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        t0 = time.perf_counter()
        await asyncio.gather(*(noop.defer_async(at=time.time()) for _ in range(n)))
        await app.run_worker_async(
            wait=False, concurrency=10, install_signal_handlers=False, listen_notify=True
        )
        seconds = time.perf_counter() - t0
    return _result(n, len(lat), seconds, lat)


def _result(n: int, done: int, seconds: float, lat: list[float]) -> dict[str, Any]:
    from scripts.bench._util import median, pct

    return {
        "tasks": n,
        "succeeded": done,
        "tasks_per_s": round(n / seconds),
        "p50_ms": median(lat),
        "p95_ms": pct(lat, 95),
    }


def _one(side: str, url: str, n: int) -> None:
    """Run one side in this process and print its result as JSON (the orchestrator's child)."""
    run = {"agen": _agen, "pgqueuer": _pgqueuer, "procrastinate": _procrastinate}[side]
    print(json.dumps(asyncio.run(run(url, n))))


def _installed(side: str, path: str) -> bool:
    if side == "agen":
        return True
    probe = subprocess.run(
        [sys.executable, "-c", f"import {side}"], env=_env(side, path), capture_output=True
    )
    return probe.returncode == 0


def _env(side: str, peers_path: str) -> dict[str, str]:
    parts = [str(ROOT)] + ([peers_path] if peers_path and side != "agen" else [])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(parts)}


def _wal_commits(cluster: Any, start: str, end: str) -> int:
    """COMMIT records in the WAL between two locations (pg_waldump): the commits that reached the disk,
    whether the client sent COMMIT or ran in autocommit. Each run is alone on the cluster."""
    proc = subprocess.run(
        [
            str(cluster.bindir / "pg_waldump"),
            "-p",
            str(cluster.root / "data" / "pg_wal"),
            "-s",
            start,
            "-e",
            end,
            "--stats=record",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in proc.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "Transaction/COMMIT":
            return int(parts[1])
    return 0


def _counted(
    cluster: Any, admin: Any, dbname: str, side: str, n: int, peers_path: str
) -> dict[str, Any]:
    import psycopg

    url = cluster.url(dbname)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("SELECT pg_stat_statements_reset()")
    start = admin.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.bench.pg_peers",
            "--one",
            side,
            "--url",
            url,
            "--n",
            str(n),
        ],
        env=_env(side, peers_path),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        raise SystemExit(f"{side} failed: {proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    end = admin.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
    rows = admin.execute(
        "SELECT s.query, s.calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid"
        " WHERE d.datname = %s",
        (dbname,),
    ).fetchall()
    calls: dict[str, int] = {}
    for query, k in rows:
        if "pg_stat_statements" not in query:
            calls[query] = calls.get(query, 0) + int(k)
    ends = ("BEGIN", "COMMIT", "ROLLBACK")
    out["statements_per_task"] = round(sum(v for k, v in calls.items() if k not in ends) / n, 1)
    out["commits_per_task"] = round(_wal_commits(cluster, start, end) / n, 2)
    out["advisory_locks_per_task"] = round(
        sum(v for k, v in calls.items() if "pg_advisory" in k) / n, 2
    )
    return out


def run(n: int, rounds: int, *, durable: bool = True, peers_path: str = "") -> dict[str, Any]:
    import psycopg

    from scripts.bench._util import median
    from tests.pg import start_cluster

    cluster = start_cluster(durable=durable)
    admin = psycopg.connect(cluster.url("postgres"), autocommit=True)
    admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")  # its view, read from here
    sides = [s for s in SIDES if _installed(s, peers_path)]
    found: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    k = 0
    try:
        for _ in range(rounds):
            for side in sides:
                k += 1
                name = f"peers_{os.getpid()}_{k}"
                admin.execute(f"CREATE DATABASE {name}")
                found[side].append(_counted(cluster, admin, name, side, n, peers_path))
    finally:
        admin.close()
        cluster.stop()
    out: dict[str, Any] = {
        "settings": "fsync, synchronous_commit, full_page_writes on (initdb's defaults)"
        if durable
        else "fsync=off synchronous_commit=off full_page_writes=off",
        "tasks": n,
        "rounds": rounds,
    }
    for side, runs in found.items():
        out[side] = {
            key: median([float(r[key]) for r in runs])
            for key in runs[0]
            if isinstance(runs[0][key], (int, float))
        }
        out[side]["all_tasks_per_s"] = [r["tasks_per_s"] for r in runs]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fsync-off", action="store_true")
    ap.add_argument("--peers-path", default="")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", choices=SIDES, help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        _one(a.one, a.url, a.n)
        return
    out = run(a.n, a.rounds, durable=not a.fsync_off, peers_path=a.peers_path)
    if a.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return
    print(
        f"Postgres: {out['settings']}; {out['tasks']} jobs each, median of {out['rounds']} rounds"
    )
    for side in SIDES:
        r = out.get(side)
        if r is None:
            print(f"{side}: not installed")
            continue
        print(
            f"{side}: {r['tasks_per_s']:.0f} tasks/s (rounds {r['all_tasks_per_s']}), p50 {r['p50_ms']:.0f} ms;"
            f" per task {r['statements_per_task']} statements, {r['commits_per_task']} commits,"
            f" {r['advisory_locks_per_task']} advisory locks"
        )


if __name__ == "__main__":
    main()
