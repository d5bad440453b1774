"""`agen ps` against a real `agen up` holding 1,000 deployments and 100,000 unfinished tasks.

The store is filled the way queue_bench fills it (10 Nests, tasks queued/running/scheduled over
1,000 deployments, paused so the scheduler leaves them alone), then a real `agen up --headless`
serves it. Timed: the whole `agen ps -n bench` command (process start, HTTP call, table of 1,000
rows) and the ListDeployments call over HTTP alone. Baseline in the same run, same Hub: the same
two on a namespace with one deployment.

    python -m scripts.bench.ps_bench [--deployments 1000] [--queue 100000] [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.bench._util import machine, median


def _agen() -> str:
    return str(Path(sys.executable).with_name("agen"))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _fill(db: Path, deployments: int, queue: int) -> None:
    from agen.store import SQLiteStore
    from scripts.bench.queue_bench import _deployment, _populate

    store = await SQLiteStore.open(db)
    await store.write(lambda tx: _populate(tx, deployments, queue, 10))
    await store.write(lambda tx: _deployment(tx, "solo", {"min": 0, "max": 1}))
    await store.write(
        lambda tx: tx.execute("UPDATE deployments SET paused = 1, pause_reason = 'bench'")
    )
    await store.write(
        lambda tx: tx.execute("UPDATE deployments SET namespace = 'solo' WHERE name = 'solo'")
    )
    await store.close()


def run(deployments: int = 1000, queue: int = 100_000, repeat: int = 5) -> dict[str, Any]:
    import httpx

    with tempfile.TemporaryDirectory() as d:
        home = Path(d) / "home"
        home.mkdir()
        t0 = time.perf_counter()
        asyncio.run(_fill(home / "agen.db", deployments, queue))
        fill_s = time.perf_counter() - t0
        env = {k: v for k, v in os.environ.items() if k not in ("AGEN_HUB", "AGEN_TOKEN")}
        env["AGEN_HOME"] = str(home)
        port = _port()
        url = f"http://127.0.0.1:{port}"
        with open(home / "up.log", "wb") as log:
            proc = subprocess.Popen(
                [_agen(), "up", "--headless", "--listen", f"127.0.0.1:{port}", "--capacity", "1"],
                env=env,
                stdout=log,
                stderr=log,
            )
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if (
                        httpx.get(url + "/health", timeout=1).status_code == 200
                        and (home / "local.json").exists()
                    ):
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"agen up did not start: {(home / 'up.log').read_text()[-2000:]}"
                    )
                time.sleep(0.2)
            token = json.loads((home / "local.json").read_text())["token"]

            def cli(ns: str) -> float:
                times = []
                for _ in range(repeat):
                    t = time.perf_counter()
                    r = subprocess.run(
                        [_agen(), "ps", "-n", ns], env=env, capture_output=True, timeout=120
                    )
                    times.append((time.perf_counter() - t) * 1000)
                    if r.returncode != 0:
                        raise SystemExit(f"agen ps -n {ns} failed: {r.stderr.decode()[-2000:]}")
                return round(median(times), 1)

            def rpc(ns: str) -> tuple[float, int]:
                times, rows = [], 0
                with httpx.Client(
                    base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120
                ) as h:
                    for _ in range(repeat):
                        t = time.perf_counter()
                        resp = h.post("/v1/ListDeployments", json={"namespace": ns})
                        times.append((time.perf_counter() - t) * 1000)
                        resp.raise_for_status()
                        rows = len(resp.json().get("deployments", []))
                return round(median(times), 1), rows

            solo_rpc, solo_rows = rpc("solo")
            big_rpc, big_rows = rpc("bench")
            solo_cli = cli("solo")
            big_cli = cli("bench")
        finally:
            proc.terminate()
            proc.wait(60)
    if big_rows != deployments or solo_rows != 1:
        raise SystemExit(
            f"ps bench: ListDeployments returned {big_rows}/{solo_rows} rows, not {deployments}/1"
        )
    return {
        "name": "ps",
        "machine": machine(),
        "deployments": deployments,
        "unfinished_tasks": queue,
        "fill_s": round(fill_s, 1),
        "list_rpc_1_ms": solo_rpc,
        "list_rpc_ms": big_rpc,
        "ratio_rpc_vs_1": round(big_rpc / solo_rpc, 1),
        "agen_ps_1_ms": solo_cli,
        "agen_ps_ms": big_cli,
        "ratio_ps_vs_1": round(big_cli / solo_cli, 2),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--deployments", type=int, default=1000)
    ap.add_argument("--queue", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    r = run(args.deployments, args.queue, args.repeat)
    if args.json:
        print(json.dumps(r))
        return
    print(
        f"agen ps, {r['deployments']} deployments / {r['unfinished_tasks']} tasks: {r['agen_ps_ms']} ms "
        f"({r['ratio_ps_vs_1']}x one deployment); ListDeployments over HTTP {r['list_rpc_ms']} ms "
        f"({r['ratio_rpc_vs_1']}x)"
    )


if __name__ == "__main__":
    main()
