"""Delegation: what a child task costs its parent, and a fan-out of 1,000 children.

* overhead (in-process LocalNode, fake models, one parent at a time): call_agent's child
  submitted → child done → parent resumed, p50, for the inline path (the parent waits in place)
  and the suspend path (inlineWait 0s: the parent gives up its slot and is woken by the child's
  end); baseline: a plain task of the same child deployment, submitted → done, in the same run.
  Times come from the store's own task events, not from the client.
* fan-out (a real `agen up --headless`): one parent starts N joined children in one turn and
  finishes once every result is in; wall time and the `agen up` process's peak RSS (VmHWM);
  baseline: N plain tasks submitted over HTTP to the same child deployment in the same process.

    python -m scripts.bench.delegation_bench [--parents 50] [--children 1000] [--json]
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

import httpx

from scripts.bench._util import machine, median

DELEGATING: dict[str, Any] = {
    "delegates": [{"name": "child"}],
    "permissions": {"allow": ["call_agent", "start_agent"]},
}
"""A lead that delegates to ``child`` without asking (delegating asks by default)."""


def _bundle(
    root: Path, name: str, script: list[dict[str, Any]] | None, config: dict[str, Any]
) -> Path:
    fake: dict[str, Any] = {"script": script} if script is not None else {"echo": True}
    files: dict[str, Any] = {
        "plugin.json": {"name": name, "version": "0.1.0"},
        "x-agen/agent.md": f"---\nname: {name}\n---\nYou answer briefly.\n",
        "x-agen/harness.json": {"provider": "fake", "fake": fake},
        "x-agen/config.json": config,
    }
    for path, value in files.items():
        target = root / name / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(value if isinstance(value, str) else json.dumps(value))
    return root / name


def _files(path: Path) -> dict[str, str]:
    import base64

    from agen.bundle import walk_bundle

    return {p: base64.b64encode(d).decode() for p, d in walk_bundle(path).items()}


def _call(agent: str) -> list[dict[str, Any]]:
    return [
        {"toolCalls": [{"name": "call_agent", "arguments": {"agent": agent, "input": "x"}}]},
        {"toolCalls": [{"name": "finish", "arguments": {"summary": "ok"}}]},
    ]


async def overhead(tmp: Path, parents: int) -> dict[str, Any]:
    from agen.api import registry as r
    from agen.client import Client
    from agen.node import LocalNode
    from agen.store import SQLiteStore
    from agen.wire.deployments import CreateDeploymentRequest
    from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest

    store = await SQLiteStore.open(tmp / "agen.db")
    node = LocalNode(store, tick_s=0.05, heartbeat_s=0.05, capacity=8)
    await node.start()
    client = Client.in_process(node.hub)
    pool = {"kind": "pool", "scale": {"min": 1, "max": 2}}
    bundles = [
        _bundle(tmp, "child", None, pool),
        _bundle(tmp, "inline", _call("child"), {**pool, **DELEGATING}),
        _bundle(
            tmp,
            "suspend",
            _call("child"),
            {**pool, **DELEGATING, "limits": {"inlineWait": "0s"}},
        ),
    ]
    for b in bundles:
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=_files(b)))

    async def run(deployment: str) -> str:
        t = await client.call(r.SubmitTask, SubmitTaskRequest(deployment=deployment, input="go"))
        while True:
            got = await client.call(r.GetTask, GetTaskRequest(id=t.task.id, wait_seconds=10))
            if got.task.state in ("succeeded", "failed", "cancelled", "expired"):
                return t.task.id

    async def ev(task_id: str, kind: str, after: int = 0) -> int:
        v = await store.scalar(
            "SELECT MIN(created_ms) FROM events WHERE task_id = ? AND type = ? AND created_ms >= ?",
            (task_id, kind, after),
        )
        return int(v)

    try:
        for _ in range(5):  # warm: instances up, code paths loaded
            await run("child")
            await run("inline")
            await run("suspend")
        plain: list[float] = []
        inline: list[float] = []
        suspend: list[float] = []
        for _ in range(parents):
            tid = await run("child")
            plain.append(await ev(tid, "task.succeeded") - await ev(tid, "task.queued"))
            for name, out in (("inline", inline), ("suspend", suspend)):
                parent = await run(name)
                child = await store.scalar(
                    "SELECT id FROM tasks WHERE parent_task_id = ?", (parent,)
                )
                submitted = await ev(child, "task.queued")
                done = await ev(child, "task.succeeded")
                if name == "inline":  # the parent's call returns: its finish turn is the resume
                    resumed = int(
                        await store.scalar(
                            "SELECT MIN(s.started_ms) FROM spans s WHERE s.task_id = ?"
                            " AND s.name = 'gen_ai.chat' AND s.started_ms >= ?",
                            (parent, done),
                        )
                    )
                else:
                    resumed = await ev(parent, "task.started", done)
                out.append(resumed - submitted)
    finally:
        await node.drain(5)
        await store.close()
    return {
        "parents": parents,
        "plain_task_p50_ms": median(plain),
        "inline_p50_ms": median(inline),
        "suspend_p50_ms": median(suspend),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def fan_out(tmp: Path, n: int) -> dict[str, Any]:
    home, port = tmp / "home", _free_port()
    env = {**os.environ, "AGEN_HOME": str(home)}
    env.pop("AGEN_HUB", None)
    env.pop("AGEN_TOKEN", None)
    agen = str(Path(sys.executable).with_name("agen"))
    proc = subprocess.Popen(
        [agen, "up", "--headless", "--listen", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if (
                    httpx.get(url + "/health", timeout=0.5).status_code == 200
                    and (home / "local.json").exists()
                ):
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("agen up did not start")
            time.sleep(0.1)
        token = json.loads((home / "local.json").read_text())["token"]
        http = httpx.Client(
            base_url=url + "/v1/", headers={"Authorization": f"Bearer {token}"}, timeout=60
        )

        def rpc(method: str, body: dict[str, Any]) -> dict[str, Any]:
            resp = http.post(method, json=body)
            resp.raise_for_status()
            return dict(resp.json())

        pool = {"kind": "pool", "scale": {"min": 1, "max": 4, "maxConcurrency": 8}}
        starts = [
            {"name": "start_agent", "arguments": {"agent": "child", "input": f"n{i}"}}
            for i in range(n)
        ]
        lead = _bundle(
            tmp,
            "lead",
            [
                {"toolCalls": starts},
                {"toolCalls": [{"name": "finish", "arguments": {"summary": "ok"}}]},
            ],
            {
                "kind": "pool",
                "scale": {"min": 1, "max": 1},
                **DELEGATING,
                "limits": {"maxFanOut": n, "maxTotalDelegations": n},
            },
        )
        for b in (_bundle(tmp, "child", None, pool), lead):
            rpc("CreateDeployment", {"files": _files(b)})
        idle_mb = _hwm_mb(proc.pid)

        def wait_done(task_ids: list[str]) -> None:
            for tid in task_ids:
                while rpc("GetTask", {"id": tid, "wait_seconds": 30})["task"]["state"] not in (
                    "succeeded",
                    "failed",
                    "cancelled",
                    "expired",
                ):
                    pass

        t0 = time.perf_counter()
        ids = [
            rpc("SubmitTask", {"deployment": "child", "input": f"p{i}"})["task"]["id"]
            for i in range(n)
        ]
        wait_done(ids)
        plain_s = time.perf_counter() - t0
        plain_mb = _hwm_mb(proc.pid)
        t0 = time.perf_counter()
        root = rpc("SubmitTask", {"deployment": "lead", "input": "fan out"})["task"]["id"]
        wait_done([root])
        fan_s = time.perf_counter() - t0
        state = rpc("GetTask", {"id": root})["task"]
        fan_mb = _hwm_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)
    return {
        "children": n,
        "fan_out_wall_s": round(fan_s, 2),
        "fan_out_state": state["state"],
        "plain_wall_s": round(plain_s, 2),
        "idle_rss_mb": round(idle_mb, 1),
        "plain_peak_rss_mb": round(plain_mb, 1),
        "fan_out_peak_rss_mb": round(fan_mb, 1),
    }


def run(parents: int, children: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "o").mkdir()
        (tmp / "f").mkdir()
        os.environ["AGEN_HOME"] = str(tmp / "o" / "home")
        over = asyncio.run(overhead(tmp / "o", parents))
        fan = fan_out(tmp / "f", children)
    return {"name": "delegation", "overhead": over, "fan_out": fan}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--parents", type=int, default=50)
    ap.add_argument("--children", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = run(args.parents, args.children)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(machine())
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
