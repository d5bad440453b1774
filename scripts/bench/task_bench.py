"""End-to-end task throughput and latency: submit -> complete, no-tool tasks, fake model.

Three figures from the same run, same disk:
  * baseline: raw sqlite3 commits/s (one tiny transaction per commit, WAL, synchronous=NORMAL);
  * in-process: a Hub + local Nest in this process, tasks submitted through the in-process client;
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
        "x-agen/config.json": {"kind": "pool", "scale": {"min": instances, "max": instances,
                                                          "maxConcurrency": concurrency}},
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
    rows = conn.execute("SELECT id, created_ms, finished_ms, state FROM tasks WHERE finished_ms IS NOT NULL").fetchall()
    conn.close()
    rows = [r for r in rows if ids is None or r[0] in ids]
    ok = sum(1 for r in rows if r[3] == "succeeded")
    return [float(r[2] - r[1]) for r in rows], ok, len(rows)


async def in_process(tmp: Path, n: int, instances: int, concurrency: int) -> dict[str, Any]:
    from agen.api import registry as r
    from agen.api.models.deployments import CreateDeploymentRequest
    from agen.api.models.tasks import SubmitTaskRequest
    from agen.bundle import walk_bundle
    from agen.client import Client
    from agen.hub.deployments import encode_files
    from agen.node import LocalNode
    from agen.store import SQLiteStore

    db = tmp / "inproc.db"
    store = await SQLiteStore.open(db)
    node = LocalNode(store, capacity=0)
    await node.start()
    client = Client.in_process(node.hub)
    bundle = write_bundle(tmp / "bundle", instances, concurrency)
    await client.call(r.CreateDeployment, CreateDeploymentRequest(files=encode_files(walk_bundle(bundle))))
    while sum(i.state == "ready" for i in node.manager.instances.values()) < instances:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    t0 = time.perf_counter()
    batch = 200
    for start in range(0, n, batch):
        await asyncio.gather(*(client.call(r.SubmitTask, SubmitTaskRequest(deployment="bench", input=f"t{i}"))
                               for i in range(start, min(n, start + batch))))
    submitted = time.perf_counter() - t0
    while True:
        done = await store.scalar("SELECT COUNT(*) FROM tasks WHERE finished_ms IS NOT NULL")
        if done >= n:
            break
        await asyncio.sleep(0.02)
    elapsed = time.perf_counter() - t0
    await node.drain(10)
    await store.close()
    lat, ok, _total = latencies(db)
    return {"tasks": n, "succeeded": ok, "seconds": round(elapsed, 3), "tasks_per_s": round(n / elapsed),
            "submit_per_s": round(n / submitted), "p50_ms": median(lat), "p95_ms": pct(lat, 95),
            "p99_ms": pct(lat, 99)}


def start_up(tmp: Path, instances: int, concurrency: int) -> tuple[subprocess.Popen[bytes], str, str, Path]:
    """A real `agen up` with the bench bundle deployed: (process, url, admin token, home)."""
    import httpx

    from tests.e2e.harness import AGEN, free_port

    home = tmp / "http-home"
    home.mkdir()
    port = free_port()
    env = {**os.environ, "AGEN_HOME": str(home)}
    log = open(home / "up.log", "wb")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen([AGEN, "up", "--headless", "--listen", f"127.0.0.1:{port}", "--capacity", "0"],
                            env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(url + "/health", timeout=0.5).status_code == 200 and (home / "local.json").exists():
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    token = json.loads((home / "local.json").read_text())["token"]
    bundle = write_bundle(tmp / "bundle-http", instances, concurrency)
    subprocess.run([AGEN, "deploy", str(bundle)], env=env, check=True, capture_output=True)
    return proc, url, token, home


async def over_http(url: str, token: str, n: int, instances: int, clients: int) -> tuple[set[str], float, float]:
    import httpx

    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"},
                                 limits=httpx.Limits(max_connections=clients), timeout=60) as http:
        while True:
            dep = (await http.post("/v1/GetDeployment", json={"name": "bench"})).json()["deployment"]
            if dep["ready"] >= instances:
                break
            await asyncio.sleep(0.1)
        ids: set[str] = set()
        queue = iter(range(n))
        t0 = time.perf_counter()

        async def worker() -> None:
            for i in queue:
                resp = await http.post("/v1/SubmitTask", json={"deployment": "bench", "input": f"t{i}"})
                ids.add(resp.json()["task"]["id"])

        await asyncio.gather(*(worker() for _ in range(clients)))
        submitted = time.perf_counter() - t0
        while True:
            dep = (await http.post("/v1/GetDeployment", json={"name": "bench"})).json()["deployment"]
            if dep["queued"] + dep["running"] == 0:
                break
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - t0
    return ids, submitted, elapsed


def http_figures(tmp: Path, n: int, instances: int, concurrency: int, clients: int) -> dict[str, Any]:
    proc, url, token, home = start_up(tmp, instances, concurrency)
    try:
        ids, submitted, elapsed = asyncio.run(over_http(url, token, n, instances, clients))
    finally:
        proc.terminate()
        proc.wait(60)
    lat, ok, _total = latencies(home / "agen.db", ids)
    return {"tasks": n, "succeeded": ok, "seconds": round(elapsed, 3), "tasks_per_s": round(n / elapsed),
            "submit_per_s": round(n / submitted), "p50_ms": median(lat), "p95_ms": pct(lat, 95),
            "p99_ms": pct(lat, 99), "http_clients": clients}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--http-n", type=int, default=1500)
    ap.add_argument("--instances", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=256, help="scale.maxConcurrency per instance")
    ap.add_argument("--clients", type=int, default=32, help="concurrent HTTP submitters")
    ap.add_argument("--skip-http", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["AGEN_HOME"] = str(tmp / "home")
        base = raw_commits(tmp / "raw.db")
        inproc = asyncio.run(in_process(tmp, args.n, args.instances, args.concurrency))
        http = None if args.skip_http else http_figures(tmp, args.http_n, args.instances, args.concurrency,
                                                        args.clients)
    report = {
        "machine": machine(), "rev": git_rev(), "raw_sqlite_commits_per_s": round(base),
        "in_process": inproc, "http": http,
        "in_process_vs_raw_commits": round(inproc["tasks_per_s"] / base, 3),
    }
    print(json.dumps(report, indent=2))
    print(f"in-process: {inproc['tasks_per_s']} tasks/s (p50 {inproc['p50_ms']:.0f} ms, p95 {inproc['p95_ms']:.0f} ms); "
          f"raw SQLite {round(base)} commits/s", file=sys.stderr)
    if http:
        print(f"HTTP: {http['tasks_per_s']} tasks/s (p50 {http['p50_ms']:.0f} ms, p95 {http['p95_ms']:.0f} ms)",
              file=sys.stderr)


if __name__ == "__main__":
    main()
