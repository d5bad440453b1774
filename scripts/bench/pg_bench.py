"""The Postgres Store against raw Postgres and against SQLite, in the same run on the same machine.

A throwaway cluster is started for the run (tests/pg.py: initdb into a temp folder, a Unix socket) at
initdb's default durable settings (fsync, synchronous_commit and full_page_writes on: what users run);
``--fsync-off`` measures with all three off instead (agen and the server's locking without this disk),
and the report says which.

1. Leases/s: N queued tasks of one deployment, leased one per transaction until none is left, by 1 and
   by 4 leasing connections:
   * agen: ``lease_tasks(limit=1)`` through ``PostgresStore.write`` (what a Nest's lease RPC runs: the
     candidate query ``FOR UPDATE SKIP LOCKED`` with the pause, conversation and lock checks, the lease
     UPDATE, the task.leased event and the NOTIFY in the commit's round trip; no fleet-wide lock);
   * raw: plain psycopg on the same schema and a fresh copy of the same rows, one
     ``SELECT id … ORDER BY priority, seq LIMIT 1 FOR UPDATE SKIP LOCKED`` + one ``UPDATE`` per
     transaction, the least a lease can be;
   * raw with agen's records: the same, plus what the spec makes a lease keep (the task.leased event,
     the NOTIFY for event followers): the floor agen's lease is held to, hand-written.
   Each side runs 3 times, alternated, on fresh copies of the rows; the best of each is reported.
   And the same queue emptied by one Hub process and by two (4 leasing connections each, started
   before the clock runs): what a second Hub on the database adds.
2. The in-process task pipeline (Hub + local Nest in one process, fake model, submit -> complete) on a
   Postgres store and on a SQLite store, with statements, commits and advisory locks per task counted by
   pg_stat_statements.

    python -m scripts.bench.pg_bench [--tasks 2000] [--pipeline 1000] [--fsync-off] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agen.hub import queue as q
from agen.store import Store
from scripts.bench._util import machine, median, pct

ROUNDS = 3


def _cluster(durable: bool) -> tuple[Any, Any]:
    """(cluster, databases) of a throwaway server; SystemExit when this machine has none."""
    from tests.pg import Databases, find_bindir, start_cluster

    if find_bindir() is None:
        raise SystemExit("no PostgreSQL server binaries (initdb) on this machine")
    cluster = start_cluster(durable=durable)
    return cluster, Databases(cluster)


async def _fill(store: Store, n: int) -> str:
    from tests.unit.queue_helpers import add_deployment

    dep: str = await store.write(lambda tx: add_deployment(tx, "bench"))
    batch = 500
    for start in range(0, n, batch):

        def submit(tx: Any, start: int = start) -> None:
            for i in range(start, min(n, start + batch)):
                q.submit_task(
                    tx,
                    q.NewTask(
                        namespace="default", deployment_id=dep, deployment="bench", input=str(i)
                    ),
                )

        await store.write(submit)
    return dep


async def agen_leases(url: str, n: int, connections: int) -> float:
    from agen.store.postgres import PostgresStore

    store = await PostgresStore.open(url, pool_size=connections)
    try:
        dep = await _fill(store, n)
        leased = 0

        async def leaser(w: int) -> None:
            nonlocal leased
            while True:
                got = await store.write(
                    lambda tx: q.lease_tasks(
                        tx,
                        deployment_id=dep,
                        nest_id="n",
                        instance_id=f"i{w}",
                        limit=1,
                        lease_ms=600_000,
                    )
                )
                if not got:
                    return
                leased += len(got)

        t0 = time.perf_counter()
        await asyncio.gather(*(leaser(w) for w in range(connections)))
        seconds = time.perf_counter() - t0
        twice = await store.scalar(
            "SELECT COUNT(*) FROM events WHERE type = 'task.leased'"
            " GROUP BY task_id HAVING COUNT(*) > 1 LIMIT 1"
        )
    finally:
        await store.close()
    if leased != n or twice:
        raise SystemExit(f"bench bug: leased {leased} of {n}, a task leased twice: {bool(twice)}")
    return n / seconds


def _hub_process(url: str, dep: str, connections: int, ready: Any, go: Any, out: Any) -> None:
    """One Hub process's leasing: ``connections`` leasers on a store of its own until the queue is empty."""
    from agen.store.postgres import PostgresStore

    async def main() -> int:
        store = await PostgresStore.open(url, pool_size=connections)
        try:
            ready.release()
            await asyncio.to_thread(go.wait)

            async def leaser(w: int) -> int:
                done = 0
                while await store.write(
                    lambda tx: q.lease_tasks(
                        tx,
                        deployment_id=dep,
                        nest_id="n",
                        instance_id=f"i{w}",
                        limit=1,
                        lease_ms=600_000,
                    )
                ):
                    done += 1
                return done

            return sum(await asyncio.gather(*(leaser(w) for w in range(connections))))
        finally:
            await store.close()

    out.put(asyncio.run(main()))


def hub_leases(url: str, n: int, hubs: int, connections: int = 4) -> float:
    """Leases/s of ``hubs`` Hub processes (each ``connections`` leasers) emptying one queue together:
    what a second Hub on the same database adds."""
    import multiprocessing

    from agen.store.postgres import PostgresStore

    async def fill() -> str:
        store = await PostgresStore.open(url)
        try:
            return await _fill(store, n)
        finally:
            await store.close()

    dep = asyncio.run(fill())
    ctx = multiprocessing.get_context("spawn")
    ready, go, out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_hub_process, args=(url, dep, connections, ready, go, out))
        for _ in range(hubs)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire()  # every Hub has opened its store: start-up is not measured
    t0 = time.perf_counter()
    go.set()
    leased = sum(out.get() for _ in procs)
    seconds = time.perf_counter() - t0
    for p in procs:
        p.join()
    if leased != n:
        raise SystemExit(f"bench bug: {hubs} Hubs leased {leased} of {n}")
    return n / seconds


def raw_leases(url: str, n: int, connections: int, *, records: bool = False) -> float:
    """Plain psycopg, ``connections`` threads, one SKIP LOCKED lease per transaction.

    ``records=True`` is the floor of what agen's lease must also keep (seed 000 §5/§11): the task.leased
    event (its xid recorded by the column's default) and the NOTIFY that wakes the event followers,
    hand-written with no Store around it."""
    import psycopg

    from agen.store.postgres import CHANNEL

    counts = [0] * connections
    start = threading.Barrier(connections + 1)

    def leaser(w: int) -> None:
        with psycopg.connect(url) as conn:
            start.wait()
            while True:
                with conn.transaction():
                    row = conn.execute(
                        "SELECT id FROM tasks WHERE deployment_id = %s AND state = 'queued'"
                        " ORDER BY priority, seq LIMIT 1 FOR UPDATE SKIP LOCKED",
                        (dep,),
                    ).fetchone()
                    if row is None:
                        return
                    conn.execute(
                        "UPDATE tasks SET state = 'leased', lease_id = %s, lease_nest_id = 'n',"
                        " lease_instance_id = %s, lease_expires_ms = %s, attempts = attempts + 1"
                        " WHERE id = %s",
                        (f"l{w}.{counts[w]}", f"i{w}", 2**40, row[0]),
                    )
                    if records:
                        conn.execute(
                            "INSERT INTO events (id, namespace, type, task_id, data, created_ms)"
                            " VALUES (%s, 'default', 'task.leased', %s, %s, %s)",
                            (f"e{w}.{counts[w]}", row[0], '{"attempt": 1}', 0),
                        )
                        conn.execute("SELECT pg_notify(%s, '')", (CHANNEL,))
                counts[w] += 1

    with psycopg.connect(url) as conn:
        dep = conn.execute("SELECT id FROM deployments WHERE name = 'bench'").fetchone()[0]  # type: ignore[index]
    threads = [threading.Thread(target=leaser, args=(w,)) for w in range(connections)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    if sum(counts) != n:
        raise SystemExit(f"bench bug: raw leased {sum(counts)} of {n}")
    return n / seconds


async def _raw_rows(url: str, n: int) -> None:
    """The same queued rows for the raw leasers (filled through agen: same schema, same row shapes)."""
    from agen.store.postgres import PostgresStore

    store = await PostgresStore.open(url)
    try:
        await _fill(store, n)
    finally:
        await store.close()


async def pipeline(
    store: Store, n: int, instances: int = 2, concurrency: int = 256
) -> dict[str, Any]:
    """A Hub + local Nest in this process; ``n`` fake-model tasks submitted in batches, until all end."""
    from agen.api import registry as r
    from agen.bundle import walk_bundle
    from agen.client import Client
    from agen.hub.rpc.deployments import encode_files
    from agen.node import LocalNode
    from agen.wire.deployments import CreateDeploymentRequest
    from agen.wire.tasks import SubmitTaskRequest
    from scripts.bench.task_bench import write_bundle

    node = LocalNode(store, capacity=0)
    await node.start()
    try:
        client = Client.in_process(node.hub)
        with tempfile.TemporaryDirectory() as d:
            bundle = write_bundle(Path(d) / "bundle", instances, concurrency)
            await client.call(
                r.CreateDeployment, CreateDeploymentRequest(files=encode_files(walk_bundle(bundle)))
            )
        while sum(i.state == "ready" for i in node.manager.instances.values()) < instances:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        t0, c0 = time.perf_counter(), time.process_time()
        for start in range(0, n, 200):
            await asyncio.gather(
                *(
                    client.call(r.SubmitTask, SubmitTaskRequest(deployment="bench", input=f"t{i}"))
                    for i in range(start, min(n, start + 200))
                )
            )
        while (  # noqa: ASYNC110 - the store is polled as task_bench does: no event says "all done"
            await store.scalar("SELECT COUNT(*) FROM tasks WHERE finished_ms IS NOT NULL") or 0
        ) < n:
            await asyncio.sleep(0.02)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        rows = await store.all(
            "SELECT created_ms, finished_ms, state FROM tasks WHERE finished_ms IS NOT NULL"
        )
    finally:
        await node.drain(10)
    lat = [float(x["finished_ms"] - x["created_ms"]) for x in rows]
    return {
        "tasks": n,
        "succeeded": sum(x["state"] == "succeeded" for x in rows),
        "tasks_per_s": round(n / seconds),
        # CPU of this process (event loop and store threads) per task: unlike the rate, it does not
        # follow the load other processes put on the machine.
        "cpu_us_per_task": round(cpu / n * 1e6),
        "p50_ms": median(lat),
        "p95_ms": pct(lat, 95),
    }


async def one_at_a_time(store: Store, samples: int) -> list[float]:
    """Submit -> succeeded of one task at a time on an otherwise idle Hub + local Nest (ms each, as the
    caller sees it: SubmitTask, then GetTask waiting for its end)."""
    from agen.api import registry as r
    from agen.bundle import walk_bundle
    from agen.client import Client
    from agen.hub.rpc.deployments import encode_files
    from agen.node import LocalNode
    from agen.wire.deployments import CreateDeploymentRequest
    from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest
    from scripts.bench.task_bench import write_bundle

    node = LocalNode(store, capacity=0)
    await node.start()
    lat: list[float] = []
    try:
        client = Client.in_process(node.hub)
        with tempfile.TemporaryDirectory() as d:
            bundle = write_bundle(Path(d) / "bundle", 1, 4)
            await client.call(
                r.CreateDeployment, CreateDeploymentRequest(files=encode_files(walk_bundle(bundle)))
            )
        while not any(i.state == "ready" for i in node.manager.instances.values()):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        for i in range(samples + 1):  # the first warms up (statements prepared, caches filled)
            t0 = time.perf_counter()
            task = (
                await client.call(
                    r.SubmitTask, SubmitTaskRequest(deployment="bench", input=f"t{i}")
                )
            ).task
            done = (await client.call(r.GetTask, GetTaskRequest(id=task.id, wait_seconds=30))).task
            if done.state != "succeeded":
                raise SystemExit(f"bench bug: task {task.id} ended {done.state}")
            if i:
                lat.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.2)  # idle between tasks: nothing else in flight
    finally:
        await node.drain(10)
    return lat


def _reset_statements(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("SELECT pg_stat_statements_reset()")


def _per_task(url: str, n: int) -> dict[str, float]:
    """Statements, commits and advisory locks per task on this database since ``_reset_statements``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.query, s.calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid"
            " WHERE d.datname = current_database()"
        ).fetchall()
    calls: dict[str, int] = {}
    for query, k in rows:
        if "pg_stat_statements" not in query:
            calls[query] = calls.get(query, 0) + int(k)
    return {
        "statements_per_task": round(
            sum(v for k, v in calls.items() if k not in ("BEGIN", "COMMIT", "ROLLBACK")) / n, 1
        ),
        "commits_per_task": round(calls.get("COMMIT", 0) / n, 2),
        "advisory_locks_per_task": round(
            sum(v for k, v in calls.items() if "pg_advisory" in k) / n, 2
        ),
    }


def run(tasks: int, pipeline_n: int, *, durable: bool = True) -> dict[str, Any]:
    import os

    from agen.store import SQLiteStore
    from agen.store.postgres import PostgresStore

    cluster, dbs = _cluster(durable)
    tmp = Path(tempfile.mkdtemp(prefix="agen-pg-bench-"))
    os.environ["AGEN_HOME"] = str(tmp / "home")
    try:
        leases: dict[str, Any] = {}
        for conns in (1, 4):
            raws, floors, ours = [], [], []
            for _ in range(
                ROUNDS
            ):  # alternated, best of each: a shared machine's load hits both alike
                raw_url, floor_url = dbs.new(), dbs.new()
                asyncio.run(_raw_rows(raw_url, tasks))
                asyncio.run(_raw_rows(floor_url, tasks))
                raws.append(raw_leases(raw_url, tasks, conns))
                floors.append(raw_leases(floor_url, tasks, conns, records=True))
                ours.append(asyncio.run(agen_leases(dbs.new(), tasks, conns)))
            leases[str(conns)] = {
                "agen_per_s": round(max(ours)),
                "raw_per_s": round(max(raws)),
                "raw_with_records_per_s": round(max(floors)),
            }

        one_hub, two_hubs = [], []
        for _ in range(ROUNDS):  # alternated, best of each
            one_hub.append(hub_leases(dbs.new(), tasks, 1))
            two_hubs.append(hub_leases(dbs.new(), tasks, 2))
        hubs = {"one_hub_per_s": round(max(one_hub)), "two_hubs_per_s": round(max(two_hubs))}

        async def both() -> tuple[dict[str, Any], dict[str, Any]]:
            url = dbs.new()
            _reset_statements(url)
            pg = await PostgresStore.open(url, pool_size=8)
            try:
                on_pg = await pipeline(pg, pipeline_n)
            finally:
                await pg.close()
            on_pg.update(_per_task(url, pipeline_n))
            lite = await SQLiteStore.open(tmp / "pipeline.db")
            try:
                on_sqlite = await pipeline(lite, pipeline_n)
            finally:
                await lite.close()
            return on_pg, on_sqlite

        on_pg, on_sqlite = asyncio.run(both())
    finally:
        dbs.close()
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "name": "postgres",
        "settings": "fsync, synchronous_commit, full_page_writes on (initdb's defaults)"
        if durable
        else "fsync=off synchronous_commit=off full_page_writes=off",
        "tasks_leased": tasks,
        "leases": leases,
        "hubs": hubs,
        "pipeline_postgres": on_pg,
        "pipeline_sqlite": on_sqlite,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--pipeline", type=int, default=1000)
    ap.add_argument(
        "--fsync-off",
        action="store_true",
        help="run the server with fsync, synchronous_commit and full_page_writes off (not what users run)",
    )
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = run(a.tasks, a.pipeline, durable=not a.fsync_off)
    if a.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return
    print(machine())
    print(f"Postgres: {out['settings']}")
    for conns, f in out["leases"].items():
        print(
            f"leases/s, {conns} connection(s): agen {f['agen_per_s']:,}  raw SKIP LOCKED {f['raw_per_s']:,}"
            f"  ({f['agen_per_s'] / f['raw_per_s']:.2f}x); raw with agen's records"
            f" {f['raw_with_records_per_s']:,} ({f['agen_per_s'] / f['raw_with_records_per_s']:.2f}x)"
        )
    h = out["hubs"]
    print(
        f"leases/s, Hub processes on one database (4 connections each): one {h['one_hub_per_s']:,},"
        f" two {h['two_hubs_per_s']:,} ({h['two_hubs_per_s'] / h['one_hub_per_s']:.2f}x)"
    )
    for engine in ("postgres", "sqlite"):
        p = out[f"pipeline_{engine}"]
        print(
            f"pipeline on {engine}: {p['tasks_per_s']:,} tasks/s, p50 {p['p50_ms']:.0f} ms, p95 {p['p95_ms']:.0f} ms"
        )
    p = out["pipeline_postgres"]
    print(
        f"per task on postgres: {p['statements_per_task']} statements, {p['commits_per_task']} commits,"
        f" {p['advisory_locks_per_task']} advisory locks (pg_stat_statements)"
    )


if __name__ == "__main__":
    main()
