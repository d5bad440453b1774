"""Many concurrent runs waiting on a slow model: wall time against the model's latency, peak memory.

A local OpenAI-compatible server (agen/testing/openai_server.py) answers every request after a
fixed latency. For each N, two fresh child processes talk to it:
  * baseline: the same N chat requests sent at once straight through agen's OpenAI provider;
  * agen: N runs started at once on one Runner (openai provider, baseUrl = the local server),
    each one model turn, checkpointed in SQLite.
Each child reports its wall time and its peak RSS (ru_maxrss), so the server's memory is not counted.

    python -m scripts.bench.concurrency_bench [--runs 1000,10000] [--latency 0.5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.bench._util import machine


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def _direct(url: str, n: int) -> dict[str, Any]:
    from agen.runner.providers.base import ModelRequest
    from agen.runner.providers.openai import OpenAIProvider

    provider = OpenAIProvider(api_key=None, model="slow", base_url=url)
    messages = [{"role": "system", "content": "You answer."}, {"role": "user", "content": "hi"}]
    before = _rss_mb()
    t0 = time.perf_counter()
    await asyncio.gather(
        *(provider.complete(ModelRequest(model="slow", messages=messages)) for _ in range(n))
    )
    wall = time.perf_counter() - t0
    await provider.aclose()
    return {"wall_s": wall, "rss_before_mb": before, "peak_mb": _peak_mb()}


async def _runs(url: str, n: int, db: Path) -> dict[str, Any]:
    from agen.bundle import load_bundle_files
    from agen.runner.loop import Runner
    from agen.runner.types import RunRequest
    from agen.store import SQLiteStore

    files = {
        "plugin.json": json.dumps({"name": "slow"}).encode(),
        "x-agen/agent.md": b"You answer.",
        "x-agen/harness.json": json.dumps(
            {
                "provider": "openai",
                "model": "slow",
                "baseUrl": url,
                "maxRetries": 0,
                "requestTimeout": "10m",
            }
        ).encode(),
        "x-agen/config.json": json.dumps(
            {"limits": {"maxTurns": 3, "maxRunDuration": "1h"}}
        ).encode(),
    }
    store = await SQLiteStore.open(db)
    runner = Runner(store, load_bundle_files(files), owner="bench")
    await runner.start()
    before = _rss_mb()
    t0 = time.perf_counter()
    results = await asyncio.gather(*(runner.run(RunRequest(input=f"hi {i}")) for i in range(n)))
    wall = time.perf_counter() - t0
    bad = [r.status for r in results if r.status != "succeeded"]
    await runner.close() if hasattr(runner, "close") else None
    await store.close()
    if bad:
        raise SystemExit(f"{len(bad)} of {n} runs did not succeed: {bad[:5]}")
    return {"wall_s": wall, "rss_before_mb": before, "peak_mb": _peak_mb()}


def _child(mode: str, url: str, n: int, db: str) -> None:
    result = asyncio.run(_direct(url, n) if mode == "direct" else _runs(url, n, Path(db)))
    print(json.dumps(result))


def _spawn(mode: str, url: str, n: int, db: Path) -> dict[str, Any]:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.bench.concurrency_bench",
            "--child",
            mode,
            "--url",
            url,
            "--n",
            str(n),
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if r.returncode != 0:
        raise SystemExit(f"concurrency bench child ({mode}, {n}) failed:\n{r.stderr[-3000:]}")
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


def run(runs: list[int], latency_s: float) -> dict[str, Any]:
    from agen.testing.openai_server import OpenAIServer

    rows = []
    with tempfile.TemporaryDirectory() as d, OpenAIServer(latency_s=latency_s) as server:
        for n in runs:
            direct = _spawn("direct", server.base_url, n, Path(d) / f"direct-{n}.db")
            agen = _spawn("runs", server.base_url, n, Path(d) / f"runs-{n}.db")
            rows.append(
                {
                    "runs": n,
                    "model_latency_s": latency_s,
                    "direct_wall_s": round(direct["wall_s"], 2),
                    "agen_wall_s": round(agen["wall_s"], 2),
                    "agen_wall_vs_latency": round(agen["wall_s"] / latency_s, 1),
                    "agen_wall_vs_direct": round(agen["wall_s"] / direct["wall_s"], 2),
                    "direct_peak_mb": round(direct["peak_mb"]),
                    "agen_peak_mb": round(agen["peak_mb"]),
                    "agen_kb_per_run": round(
                        (agen["peak_mb"] - agen["rss_before_mb"]) * 1024 / n, 1
                    ),
                }
            )
    return {"name": "concurrency", "machine": machine(), "rows": rows}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", default="1000,10000")
    ap.add_argument("--latency", type=float, default=0.5, help="model latency in seconds")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", choices=["direct", "runs"], help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child, args.url, args.n, args.db)
        return
    r = run([int(x) for x in args.runs.split(",") if x], args.latency)
    if args.json:
        print(json.dumps(r))
        return
    for row in r["rows"]:
        print(
            f"{row['runs']:>6} runs on a {row['model_latency_s']} s model: agen {row['agen_wall_s']} s "
            f"({row['agen_wall_vs_latency']}x the latency, {row['agen_wall_vs_direct']}x direct calls "
            f"{row['direct_wall_s']} s); peak RSS {row['agen_peak_mb']} MB vs {row['direct_peak_mb']} MB direct "
            f"({row['agen_kb_per_run']} KB/run)"
        )


if __name__ == "__main__":
    main()
