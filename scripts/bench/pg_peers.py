"""agen on Postgres beside the Postgres queues users would pick instead: pgqueuer, procrastinate, DBOS.

One throwaway cluster at initdb's durable defaults (fsync, synchronous_commit, full_page_writes on;
``--fsync-off`` turns them off, labelled), a fresh database per run. Each round runs, one after the
other (interleaved, so a shared machine's load hits them alike):

* agen in-process: Hub + local Nest in one process, fake model (``pg_bench.pipeline``), the store's
  default pool, as ``agen up`` opens it;
* agen over HTTP: a real ``agen up --store URL`` process, tasks submitted by 32 HTTP/1.1 keep-alive
  connections (``task_bench.over_http``; a lean client: httpx's own CPU per request, as much as the
  server's per task, competed with the server for this machine's two cores); CPU per task of the
  ``agen up`` process and of the load generator;
* by hand: the records agen keeps for each task written with psycopg alone, three commits a task,
  16 connections (``pg_floor``): the floor of agen's pipeline on this machine (and, one task at a
  time, the floor of its idle latency);
* pgqueuer: no-op async jobs enqueued in one batch, a worker that is shut down when its last job ran and
  the clock stops when it returned (its buffered completions flushed), so the ~1 s its drain mode waits
  on an empty queue does not count;
* procrastinate: no-op async jobs deferred at once, a worker that stops when the queue is empty;
* DBOS Transact: no-op workflows enqueued on a DBOS queue in its Postgres system database, results
  awaited (its queue polls every second, its default).

Every run is a process of its own; per job, pg_stat_statements counts statements and advisory locks
and pg_waldump the COMMIT records on its database. Then one job at a time on an idle system: ``--samples``
jobs each submitted after the one before finished, submit -> done as the caller sees it, split over
``--rounds`` rounds in a rotating order, each side after a CHECKPOINT. Medians of ``--rounds``.

The peers come from the bench extra (``pip install -e '.[bench]'``); ``--peers-path DIR`` adds a folder
they were installed into with ``pip install --target DIR`` (put on the peer processes' path only). A peer
that is not installed is left out.

    python -m scripts.bench.pg_peers [--n 500] [--rounds 3] [--samples 15] [--fsync-off]
                                     [--peers-path DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SIDES = ("agen", "agen-http", "by-hand", "pgqueuer", "procrastinate", "dbos")
MODULES = {
    "agen-http": "agen",
    "by-hand": "agen",
    "pgqueuer": "pgqueuer",
    "procrastinate": "procrastinate",
    "dbos": "dbos",
}
HTTP_CLIENTS = 32


async def _agen(url: str, n: int) -> dict[str, Any]:
    from agen.store.postgres import PostgresStore
    from scripts.bench.pg_bench import pipeline

    os.environ["AGEN_HOME"] = tempfile.mkdtemp(prefix="agen-peers-")
    store = await PostgresStore.open(url)  # the pool agen up opens
    try:
        return await pipeline(store, n)
    finally:
        await store.close()


async def _agen_latency(url: str, samples: int) -> list[float]:
    from agen.store.postgres import PostgresStore
    from scripts.bench.pg_bench import one_at_a_time

    os.environ["AGEN_HOME"] = tempfile.mkdtemp(prefix="agen-peers-")
    store = await PostgresStore.open(url)
    try:
        return await one_at_a_time(store, samples)
    finally:
        await store.close()


async def _by_hand(url: str, n: int) -> dict[str, Any]:
    """agen's records of each task written by hand with psycopg (``pg_floor``): the floor."""
    from scripts.bench.pg_floor import floor

    os.environ["AGEN_HOME"] = tempfile.mkdtemp(prefix="agen-peers-")
    out = await floor(url, n, 16)
    return {"tasks": n, "succeeded": out["tasks"], "tasks_per_s": out["tasks_per_s"]}


async def _by_hand_latency(url: str, samples: int) -> list[float]:
    from scripts.bench.pg_floor import one_at_a_time

    os.environ["AGEN_HOME"] = tempfile.mkdtemp(prefix="agen-peers-")
    return await one_at_a_time(url, samples)


async def _agen_http(url: str, n: int) -> dict[str, Any]:
    """A real `agen up --store URL` (its own process), n tasks over HTTP."""
    import psycopg

    from scripts.bench._util import process_cpu_s
    from scripts.bench.task_bench import over_http, start_up

    tmp = Path(tempfile.mkdtemp(prefix="agen-peers-http-"))
    proc, base, token, _home = start_up(tmp, 2, 256, store=url)
    try:
        cpu0, own0 = process_cpu_s(proc.pid), time.process_time()
        _ids, _submitted, seconds = await over_http(base, token, n, 2, HTTP_CLIENTS)
        cpu, own = process_cpu_s(proc.pid) - cpu0, time.process_time() - own0
    finally:
        proc.terminate()
        proc.wait(60)
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT finished_ms - created_ms FROM tasks WHERE finished_ms IS NOT NULL"
        ).fetchall()
    out = _result(n, len(rows), seconds, [float(r[0]) for r in rows])
    # CPU of the `agen up` process per task (as cpu_us_per_task of the in-process side: it does not
    # follow the machine's load as the rate does), and of the load generator beside it
    out["cpu_us_per_task"] = round(cpu / n * 1e6)
    out["client_cpu_us_per_task"] = round(own / n * 1e6)
    return out


async def _pgqueuer(url: str, n: int) -> dict[str, Any]:
    from datetime import UTC, datetime

    import psycopg
    from pgqueuer import PgQueuer, PsycopgDriver, Queries
    from pgqueuer.models import Job

    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    driver = PsycopgDriver(conn)
    await Queries(driver).install()
    lat: list[float] = []
    pgq = PgQueuer(driver)

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        lat.append((datetime.now(UTC) - job.created).total_seconds() * 1000)
        if len(lat) == n:  # its last job: stop; run() returns once its completions are flushed
            pgq.shutdown.set()

    t0 = time.perf_counter()
    await Queries(driver).enqueue(["noop"] * n, [None] * n, [0] * n)
    await pgq.run(batch_size=50)
    seconds = time.perf_counter() - t0
    return _result(n, len(lat), seconds, lat)


async def _pgqueuer_latency(url: str, samples: int) -> list[float]:
    import psycopg
    from pgqueuer import PgQueuer, PsycopgDriver, Queries
    from pgqueuer.models import Job

    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    driver = PsycopgDriver(conn)
    await Queries(driver).install()
    pgq = PgQueuer(driver)
    done = asyncio.Event()

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        done.set()

    worker = asyncio.create_task(pgq.run())
    enq = Queries(PsycopgDriver(await psycopg.AsyncConnection.connect(url, autocommit=True)))
    return await _one_at_a_time(
        samples, lambda: enq.enqueue("noop", None), done, worker, pgq.shutdown
    )


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


async def _procrastinate_latency(url: str, samples: int) -> list[float]:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    done = asyncio.Event()

    @app.task(name="noop")
    async def noop(at: float) -> None:
        done.set()

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        worker = asyncio.create_task(
            app.run_worker_async(concurrency=10, install_signal_handlers=False, listen_notify=True)
        )
        stop = asyncio.Event()

        async def watch() -> None:
            await stop.wait()
            worker.cancel()

        watcher = asyncio.create_task(watch())
        try:
            return await _one_at_a_time(
                samples, lambda: noop.defer_async(at=time.time()), done, worker, stop
            )
        finally:
            watcher.cancel()


def _dbos_app(url: str) -> Any:
    from dbos import DBOS

    DBOS(config={"name": "agenbench", "system_database_url": url, "log_level": "WARNING"})

    @DBOS.workflow()
    def noop(at: float) -> float:
        return time.time() - at

    DBOS.launch()
    return DBOS, noop, DBOS.register_queue("agenbench")


def _dbos(url: str, n: int) -> dict[str, Any]:
    dbos, noop, queue = _dbos_app(url)
    try:
        t0 = time.perf_counter()
        handles = [queue.enqueue(noop, time.time()) for _ in range(n)]
        lat = [h.get_result() * 1000 for h in handles]
        seconds = time.perf_counter() - t0
    finally:
        dbos.destroy()
    return _result(n, len(lat), seconds, lat)


def _dbos_latency(url: str, samples: int) -> list[float]:
    dbos, noop, queue = _dbos_app(url)
    lat: list[float] = []
    try:
        for i in range(samples + 1):
            t0 = time.perf_counter()
            queue.enqueue(noop, time.time()).get_result()
            if i:
                lat.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.2)
    finally:
        dbos.destroy()
    return lat


async def _one_at_a_time(
    samples: int, submit: Any, done: asyncio.Event, worker: asyncio.Task[Any], stop: asyncio.Event
) -> list[float]:
    """Submit one job, wait until the worker ran it, ``samples`` times (after one to warm up)."""
    lat: list[float] = []
    await asyncio.sleep(0.5)  # the worker is listening
    try:
        for i in range(samples + 1):
            done.clear()
            t0 = time.perf_counter()
            await submit()
            await asyncio.wait_for(done.wait(), 30)
            if i:
                lat.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.2)
    finally:
        stop.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(worker, 10)
    return lat


def _result(n: int, done: int, seconds: float, lat: list[float]) -> dict[str, Any]:
    from scripts.bench._util import median, pct

    return {
        "tasks": n,
        "succeeded": done,
        "tasks_per_s": round(n / seconds),
        "p50_ms": median(lat),
        "p95_ms": pct(lat, 95),
    }


THROUGHPUT: dict[str, Callable[[str, int], Any]] = {
    "agen": _agen,
    "agen-http": _agen_http,
    "by-hand": _by_hand,
    "pgqueuer": _pgqueuer,
    "procrastinate": _procrastinate,
    "dbos": _dbos,
}
LATENCY: dict[str, Callable[[str, int], Any]] = {
    "agen": _agen_latency,
    "by-hand": _by_hand_latency,
    "pgqueuer": _pgqueuer_latency,
    "procrastinate": _procrastinate_latency,
    "dbos": _dbos_latency,
}


def _one(side: str, url: str, n: int, samples: int) -> None:
    """Run one side in this process and print its result as JSON (the orchestrator's child): its
    throughput, or with ``samples`` its one-at-a-time latencies."""
    found: Any = LATENCY[side](url, samples) if samples else THROUGHPUT[side](url, n)
    if inspect.iscoroutine(found):  # DBOS's side is synchronous: its workflows run on its threads
        found = asyncio.run(found)
    print(json.dumps({"latency_ms": found} if samples else found))


def _installed(side: str, path: str) -> bool:
    if side == "agen":
        return True
    probe = subprocess.run(
        [sys.executable, "-c", f"import {MODULES[side]}"],
        env=_env(side, path),
        capture_output=True,
    )
    return probe.returncode == 0


def _env(side: str, peers_path: str) -> dict[str, str]:
    parts = [str(ROOT)] + ([peers_path] if peers_path and not side.startswith("agen") else [])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(parts)}


def _child(side: str, url: str, n: int, samples: int, peers_path: str) -> dict[str, Any]:
    args = ["--one", side, "--url", url, "--n", str(n), "--samples", str(samples)]
    proc = subprocess.run(
        [sys.executable, "-m", "scripts.bench.pg_peers", *args],
        env=_env(side, peers_path),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        raise SystemExit(f"{side} failed: {proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


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
    out = _child(side, url, n, 0, peers_path)
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


def run(
    n: int, rounds: int, *, samples: int = 15, durable: bool = True, peers_path: str = ""
) -> dict[str, Any]:
    import psycopg

    from scripts.bench._util import median
    from tests.pg import start_cluster

    cluster = start_cluster(durable=durable)
    admin = psycopg.connect(cluster.url("postgres"), autocommit=True)
    admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")  # its view, read from here
    sides = [s for s in SIDES if _installed(s, peers_path)]
    found: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    idle: dict[str, list[float]] = {s: [] for s in sides if s in LATENCY}
    k = 0

    def fresh() -> str:
        nonlocal k
        k += 1
        name = f"peers_{os.getpid()}_{k}"
        admin.execute(f"CREATE DATABASE {name}")
        return name

    try:
        for _ in range(rounds):
            for side in sides:
                found[side].append(_counted(cluster, admin, fresh(), side, n, peers_path))
        # One job at a time, the system idle but for it: in rounds too, each round in another order
        # and each side after a CHECKPOINT, so no side is measured while the server still writes out
        # what the throughput runs (or the side before it) dirtied.
        each = -(-samples // rounds) if samples else 0
        names = list(idle)
        for r in range(rounds if samples else 0):
            for side in names[r % len(names) :] + names[: r % len(names)]:
                admin.execute("CHECKPOINT")
                url = cluster.url(fresh())
                idle[side] += _child(side, url, 0, each, peers_path)["latency_ms"]
    finally:
        admin.close()
        cluster.stop()
    out: dict[str, Any] = {
        "settings": "fsync, synchronous_commit, full_page_writes on (initdb's defaults)"
        if durable
        else "fsync=off synchronous_commit=off full_page_writes=off",
        "tasks": n,
        "rounds": rounds,
        "samples": samples,
    }
    for side, runs in found.items():
        out[side] = {
            key: median([float(r[key]) for r in runs])
            for key in runs[0]
            if isinstance(runs[0][key], (int, float))
        }
        out[side]["all_tasks_per_s"] = [r["tasks_per_s"] for r in runs]
        if idle.get(side):
            out[side]["idle_p50_ms"] = round(median(idle[side]), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=15, help="one-at-a-time jobs per side")
    ap.add_argument("--fsync-off", action="store_true")
    ap.add_argument("--peers-path", default="")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", choices=SIDES, help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        _one(a.one, a.url, a.n, a.samples)
        return
    out = run(a.n, a.rounds, samples=a.samples, durable=not a.fsync_off, peers_path=a.peers_path)
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
        idle = f", one at a time p50 {r['idle_p50_ms']:.0f} ms" if "idle_p50_ms" in r else ""
        p50 = f", p50 {r['p50_ms']:.0f} ms" if "p50_ms" in r else ""
        cpu = f", {r['cpu_us_per_task']:.0f} us CPU" if "cpu_us_per_task" in r else ""
        print(
            f"{side}: {r['tasks_per_s']:.0f} tasks/s (rounds {r['all_tasks_per_s']}){p50}{idle};"
            f" per task {r['statements_per_task']} statements, {r['commits_per_task']} commits,"
            f" {r['advisory_locks_per_task']} advisory locks{cpu}"
        )


if __name__ == "__main__":
    main()
