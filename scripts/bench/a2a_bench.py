"""A2A round trip: a one-turn fake-model agent called through the Gateway, against the same task
through the Hub's HTTP API (what `agen run` does against a running `agen up`), in one `agen up`.

* api: message/send (A2A 1.0 JSON-RPC, blocking until the answer) to /a2a/default/echo, p50/p95;
  baseline: SubmitTask + GetTask(wait) over HTTP to the same deployment, interleaved with it.
* cli: `agen call default/echo` against `agen run echo`, each a fresh process, p50.

    python -m scripts.bench.a2a_bench [--calls 200] [--cli 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from scripts.bench._util import machine, median, pct
from scripts.bench.delegation_bench import _bundle, _free_port

AGEN = str(Path(sys.executable).with_name("agen"))


def _start(home: Path) -> tuple[subprocess.Popen[bytes], str, str, dict[str, str]]:
    port, gw_port = _free_port(), _free_port()
    env = {**os.environ, "AGEN_HOME": str(home)}
    env.pop("AGEN_HUB", None)
    env.pop("AGEN_TOKEN", None)
    proc = subprocess.Popen(
        [
            AGEN,
            "up",
            "--headless",
            "--listen",
            f"127.0.0.1:{port}",
            "--gateway-listen",
            f"127.0.0.1:{gw_port}",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url, gateway = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{gw_port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if (
                httpx.get(url + "/health", timeout=0.5).status_code == 200
                and httpx.get(gateway + "/health", timeout=0.5).status_code == 200
                and (home / "local.json").exists()
            ):
                return proc, url, gateway, env
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("agen up did not start")
        time.sleep(0.1)


def run(calls: int, cli: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        home = tmp / "home"
        proc, url, gateway, env = _start(home)
        try:
            bundle = _bundle(tmp, "echo", None, {"kind": "pool", "scale": {"min": 1, "max": 1}})
            subprocess.run([AGEN, "deploy", str(bundle)], env=env, check=True, capture_output=True)
            token = json.loads((home / "local.json").read_text())["token"]
            auth = {"Authorization": f"Bearer {token}"}
            api = httpx.Client(base_url=url + "/v1/", headers=auth, timeout=60)
            a2a = httpx.Client(headers={**auth, "A2A-Version": "1.0"}, timeout=60)

            def over_a2a(i: int) -> float:
                body = {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "SendMessage",
                    "params": {
                        "message": {
                            "role": "ROLE_USER",
                            "messageId": f"b{i}",
                            "parts": [{"text": f"hi {i}"}],
                        }
                    },
                }
                t0 = time.perf_counter()
                r = a2a.post(f"{gateway}/a2a/default/echo", json=body)
                took = (time.perf_counter() - t0) * 1000
                state = r.json()["result"]["task"]["status"]["state"]
                assert state == "TASK_STATE_COMPLETED", r.text
                return took

            def over_api(i: int) -> float:
                t0 = time.perf_counter()
                task = api.post(
                    "SubmitTask", json={"deployment": "echo", "input": f"hi {i}"}
                ).json()["task"]
                done = api.post("GetTask", json={"id": task["id"], "wait_seconds": 60}).json()[
                    "task"
                ]
                took = (time.perf_counter() - t0) * 1000
                assert done["state"] == "succeeded", done
                return took

            for i in range(5):  # warm: the instance is up, code paths loaded
                over_a2a(-1 - i)
                over_api(-1 - i)
            a2a_ms, api_ms = [], []
            for i in range(calls):  # interleaved, so both see the same machine
                a2a_ms.append(over_a2a(i))
                api_ms.append(over_api(i))

            def cli_ms(*args: str) -> float:
                t0 = time.perf_counter()
                subprocess.run([AGEN, *args], env=env, check=True, capture_output=True)
                return (time.perf_counter() - t0) * 1000

            call_ms, run_ms = [], []
            for i in range(cli):
                call_ms.append(cli_ms("call", "default/echo", f"cli {i}"))
                run_ms.append(cli_ms("run", "echo", f"cli {i}"))
        finally:
            proc.terminate()
            proc.wait(30)
    return {
        "name": "a2a",
        "machine": machine(),
        "calls": calls,
        "a2a_p50_ms": median(a2a_ms),
        "a2a_p95_ms": pct(a2a_ms, 95),
        "http_task_p50_ms": median(api_ms),
        "http_task_p95_ms": pct(api_ms, 95),
        "cli_runs": cli,
        "agen_call_p50_ms": median(call_ms) if call_ms else None,
        "agen_run_p50_ms": median(run_ms) if run_ms else None,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--cli", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result = run(args.calls, args.cli)
    print(json.dumps(result, indent=2) if args.json else result)


if __name__ == "__main__":
    main()
