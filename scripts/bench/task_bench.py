"""End-to-end task throughput and latency: submit -> complete, no-tool tasks, fake model.

Four figures from the same run, same disk:
  * baseline: raw sqlite3 commits/s (one tiny transaction per commit, WAL, synchronous=NORMAL);
  * in-process: a Hub + local Nest in this process, tasks submitted through the in-process client;
  * SQLite floor: every statement the Store's writer ran for the in-process tasks (same SQL, same
    parameters, same transactions), replayed through raw sqlite3 on a fresh database with the same
    schema and pragmas: what the durable records of a task cost with no agen code running at all;
  * HTTP: a real `agen up` process, tasks submitted over HTTP by concurrent clients.
Latency is per task, from the Hub's own timestamps (created_ms -> finished_ms).

    python -m scripts.bench.task_bench [--n 3000] [--http-n 1500] [--instances 2] [--concurrency 256]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.bench._util import git_rev, machine, median, pct


def write_bundle(root: Path, instances: int, concurrency: int) -> Path:
    files = {
        "plugin.json": {"name": "bench", "version": "0.1.0"},
        "x-agen/agent.md": "---\nname: bench\n---\nYou echo.\n",
        "x-agen/harness.json": {"provider": "fake", "fake": {"echo": True}},
        "x-agen/config.json": {
            "kind": "pool",
            "scale": {"min": instances, "max": instances, "maxConcurrency": concurrency},
        },
    }
    for path, value in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(value if isinstance(value, str) else json.dumps(value))
    return root


def raw_commits(path: Path, n: int = 5000) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    t0 = time.perf_counter()
    for i in range(n):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (v) VALUES (?)", (str(i),))
        conn.execute("COMMIT")
    rate = n / (time.perf_counter() - t0)
    conn.close()
    return rate


def latencies(db: Path, ids: set[str] | None = None) -> tuple[list[float], int, int]:
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT id, created_ms, finished_ms, state FROM tasks WHERE finished_ms IS NOT NULL"
    ).fetchall()
    conn.close()
    rows = [r for r in rows if ids is None or r[0] in ids]
    ok = sum(1 for r in rows if r[3] == "succeeded")
    return [float(r[2] - r[1]) for r in rows], ok, len(rows)


class Recorder:
    """Wraps the writer thread's sqlite3 connection and keeps every statement it runs while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.log: list[tuple[bool, str, Any]] = []
        self._connect = sqlite3.connect

    def connect(self, *args: Any, **kwargs: Any) -> Any:
        conn = self._connect(*args, **kwargs)
        import threading

        return (
            Recording(conn, self)
            if threading.current_thread().name.startswith("agen-store-writer")
            else conn
        )


class Recording:
    def __init__(self, conn: sqlite3.Connection, rec: Recorder) -> None:
        self._conn, self._rec = conn, rec

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if self._rec.on:
            self._rec.log.append((False, sql, params))
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        rows = list(rows)
        if self._rec.on:
            self._rec.log.append((True, sql, rows))
        return self._conn.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def fresh_store(db: Path, synchronous: str) -> sqlite3.Connection:
    """A raw sqlite3 connection to a new store file: agen's schema and pragmas, foreign keys off (the
    rows a benchmark's setup wrote, such as its deployment, are not replayed)."""
    from agen.store import SQLiteStore
    from agen.store.sqlite import _configure

    for f in db.parent.glob(db.name + "*"):
        f.unlink()
    SQLiteStore.open_sync(db).close_sync()
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    _configure(conn, synchronous)
    conn.execute("PRAGMA foreign_keys=OFF")
    return conn


def replay_once(tmp: Path, log: list[tuple[bool, str, Any]], synchronous: str) -> tuple[float, int]:
    conn = fresh_store(tmp / f"replay-{synchronous}.db", synchronous)
    failed = 0
    t0 = time.perf_counter()
    for many, sql, params in log:
        try:
            if many:
                conn.executemany(sql, params)
            else:
                conn.execute(sql, params).fetchall()
        except sqlite3.Error:
            failed += 1
    seconds = time.perf_counter() - t0
    conn.close()
    return seconds, failed


def replay(tmp: Path, log: list[tuple[bool, str, Any]], tasks: int) -> dict[str, Any]:
    """The recorded statements through raw sqlite3 on a fresh store file (schema and pragmas as agen's),
    at synchronous=NORMAL (agen's default) and FULL, alternating, best of two each (a noisy machine)."""
    normal, full, failed = [], [], 0
    for _ in range(2):
        seconds, failed = replay_once(tmp, log, "NORMAL")
        normal.append(seconds)
        full.append(replay_once(tmp, log, "FULL")[0])
    seconds = min(normal)
    return {
        "statements_per_task": round(len(log) / tasks, 1),
        "failed_statements": failed,
        "us_per_task": round(seconds / tasks * 1e6),
        "max_tasks_per_s": round(tasks / seconds),
        "max_tasks_per_s_full": round(tasks / min(full)),
    }


async def in_process(
    tmp: Path, n: int, instances: int, concurrency: int, recorder: Recorder | None = None
) -> dict[str, Any]:
    from agen.api import registry as r
    from agen.bundle import walk_bundle
    from agen.client import Client
    from agen.hub.rpc.deployments import encode_files
    from agen.node import LocalNode
    from agen.store import SQLiteStore
    from agen.wire.deployments import CreateDeploymentRequest
    from agen.wire.tasks import SubmitTaskRequest

    db = tmp / "inproc.db"
    store = await SQLiteStore.open(db)
    node = LocalNode(store, capacity=0)
    await node.start()
    client = Client.in_process(node.hub)
    bundle = write_bundle(tmp / "bundle", instances, concurrency)
    await client.call(
        r.CreateDeployment, CreateDeploymentRequest(files=encode_files(walk_bundle(bundle)))
    )
    while sum(i.state == "ready" for i in node.manager.instances.values()) < instances:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    if recorder is not None:
        recorder.on = True
    t0, c0 = time.perf_counter(), time.process_time()
    batch = 200
    for start in range(0, n, batch):
        await asyncio.gather(
            *(
                client.call(r.SubmitTask, SubmitTaskRequest(deployment="bench", input=f"t{i}"))
                for i in range(start, min(n, start + batch))
            )
        )
    submitted = time.perf_counter() - t0
    while True:
        done = await store.scalar("SELECT COUNT(*) FROM tasks WHERE finished_ms IS NOT NULL")
        if done >= n:
            break
        await asyncio.sleep(0.02)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    if recorder is not None:
        recorder.on = False
    await node.drain(10)
    await store.close()
    lat, ok, _total = latencies(db)
    return {
        "tasks": n,
        "succeeded": ok,
        "seconds": round(elapsed, 3),
        "tasks_per_s": round(n / elapsed),
        # CPU of this process (event loop, writer and reader threads) per task: unlike the rate, it
        # does not follow the load of other processes on the machine.
        "cpu_us_per_task": round(cpu / n * 1e6),
        "submit_per_s": round(n / submitted),
        "p50_ms": median(lat),
        "p95_ms": pct(lat, 95),
        "p99_ms": pct(lat, 99),
    }


def in_process_and_floor(
    tmp: Path, n: int, instances: int, concurrency: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The in-process figures, and the SQLite floor of the statements such a run writes. Two runs: the
    figures come from one with nothing in the way; the statements from a second one whose writer
    connection is wrapped to record them (the wrapper's Python calls, on the writer thread that bounds
    the pipeline, cost it 10-15 % of its tasks/s, measured)."""
    from unittest import mock

    for name in ("measured", "recorded"):
        (tmp / name).mkdir()
    inproc = asyncio.run(in_process(tmp / "measured", n, instances, concurrency))
    recorder = Recorder()
    with mock.patch("agen.store.sqlite.sqlite3.connect", recorder.connect):
        recorded = asyncio.run(in_process(tmp / "recorded", n, instances, concurrency, recorder))
    if recorded["succeeded"] != n:
        raise SystemExit(f"the recorded run finished {recorded['succeeded']} of {n} tasks")
    return inproc, replay(tmp, recorder.log, n)


def start_up(
    tmp: Path, instances: int, concurrency: int, store: str | None = None
) -> tuple[subprocess.Popen[bytes], str, str, Path]:
    """A real `agen up` with the bench bundle deployed: (process, url, admin token, home); on the
    home's SQLite file, or on ``store`` (``--store URL``)."""
    import httpx

    from tests.e2e.harness import AGEN, free_port

    home = tmp / "http-home"
    home.mkdir()
    port = free_port()
    env = {**os.environ, "AGEN_HOME": str(home)}
    log = open(home / "up.log", "wb")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(
        [AGEN, "up", "--headless", "--listen", f"127.0.0.1:{port}", "--capacity", "0"]
        + (["--store", store] if store else []),
        env=env,
        stdout=log,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if (
                httpx.get(url + "/health", timeout=0.5).status_code == 200
                and (home / "local.json").exists()
            ):
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    token = json.loads((home / "local.json").read_text())["token"]
    bundle = write_bundle(tmp / "bundle-http", instances, concurrency)
    subprocess.run([AGEN, "deploy", str(bundle)], env=env, check=True, capture_output=True)
    return proc, url, token, home


async def over_http(
    url: str, token: str, n: int, instances: int, clients: int
) -> tuple[set[str], float, float]:
    """``n`` tasks submitted by ``clients`` concurrent HTTP/1.1 keep-alive connections (the lean client
    of scripts.bench._http: httpx's own CPU per request competed with the server for the cores), then
    GetDeployment every 50 ms on one more until none is queued or running."""
    from scripts.bench._http import LeanClient

    watch = LeanClient(url, token)
    conns = [LeanClient(url, token) for _ in range(clients)]
    try:
        while True:
            dep = (await watch.post("/v1/GetDeployment", {"name": "bench"}))["deployment"]
            if dep["ready"] >= instances:
                break
            await asyncio.sleep(0.1)
        ids: set[str] = set()
        queue = iter(range(n))
        t0 = time.perf_counter()

        async def worker(conn: LeanClient) -> None:
            for i in queue:
                answer = await conn.post(
                    "/v1/SubmitTask", {"deployment": "bench", "input": f"t{i}"}
                )
                ids.add(answer["task"]["id"])

        await asyncio.gather(*(worker(c) for c in conns))
        submitted = time.perf_counter() - t0
        while True:
            dep = (await watch.post("/v1/GetDeployment", {"name": "bench"}))["deployment"]
            if dep["queued"] + dep["running"] == 0:
                break
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - t0
    finally:
        for c in [watch, *conns]:
            await c.close()
    return ids, submitted, elapsed


def http_figures(
    tmp: Path, n: int, instances: int, concurrency: int, clients: int
) -> dict[str, Any]:
    proc, url, token, home = start_up(tmp, instances, concurrency)
    try:
        ids, submitted, elapsed = asyncio.run(over_http(url, token, n, instances, clients))
    finally:
        proc.terminate()
        proc.wait(60)
    lat, ok, _total = latencies(home / "agen.db", ids)
    return {
        "tasks": n,
        "succeeded": ok,
        "seconds": round(elapsed, 3),
        "tasks_per_s": round(n / elapsed),
        "submit_per_s": round(n / submitted),
        "p50_ms": median(lat),
        "p95_ms": pct(lat, 95),
        "p99_ms": pct(lat, 99),
        "http_clients": clients,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--http-n", type=int, default=1500)
    ap.add_argument("--instances", type=int, default=2)
    ap.add_argument(
        "--concurrency", type=int, default=256, help="scale.maxConcurrency per instance"
    )
    ap.add_argument("--clients", type=int, default=32, help="concurrent HTTP submitters")
    ap.add_argument("--skip-http", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["AGEN_HOME"] = str(tmp / "home")
        base = raw_commits(tmp / "raw.db")
        inproc, floor = in_process_and_floor(tmp, args.n, args.instances, args.concurrency)
        http = (
            None
            if args.skip_http
            else http_figures(tmp, args.http_n, args.instances, args.concurrency, args.clients)
        )
    report = {
        "machine": machine(),
        "rev": git_rev(),
        "raw_sqlite_commits_per_s": round(base),
        "in_process": inproc,
        "sqlite_floor": floor,
        "http": http,
        "in_process_vs_raw_commits": round(inproc["tasks_per_s"] / base, 3),
        "in_process_vs_sqlite_floor": round(inproc["tasks_per_s"] / floor["max_tasks_per_s"], 3),
    }
    print(json.dumps(report, indent=2))
    print(
        f"in-process: {inproc['tasks_per_s']} tasks/s (p50 {inproc['p50_ms']:.0f} ms, p95 {inproc['p95_ms']:.0f} ms); "
        f"raw SQLite {round(base)} commits/s; the same statements replayed through raw sqlite3: "
        f"{floor['us_per_task']} us/task ({floor['statements_per_task']} statements) = at most "
        f"{floor['max_tasks_per_s']} tasks/s ({floor['max_tasks_per_s_full']} at synchronous=FULL)",
        file=sys.stderr,
    )
    if http:
        print(
            f"HTTP: {http['tasks_per_s']} tasks/s (p50 {http['p50_ms']:.0f} ms, p95 {http['p95_ms']:.0f} ms)",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
