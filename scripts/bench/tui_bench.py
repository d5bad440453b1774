"""TUI responsiveness at fleet scale: first paint, screen switches and refreshes.

Two stores from the same run, same disk: a small baseline (10 deployments, 1,000 tasks)
and the target (1,000 deployments, 100,000 tasks, 20,000 runs with messages and spans,
50 pending approvals, 5,000 events). The TUI runs headless (Pilot) on the in-process
client; a switch or refresh is timed from the key press to its load worker finishing and
the screen refreshed. Target: switches and refreshes under 100 ms.

    python -m scripts.bench.tui_bench [--deployments 1000] [--tasks 100000] [--runs 20000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.bench._util import machine, median, pct

SCREENS = (("t", "tasks"), ("a", "approvals"), ("r", "transcript"), ("w", "trace"), ("e", "events"),
           ("f", "fleet"))


def populate(tx: Any, deployments: int, tasks: int, runs: int) -> None:
    """Rows the way the Hub and runners write them, in bulk (ids sortable like ULIDs)."""
    now = tx.now_ms
    tx.execute("INSERT INTO definitions (id, name, digest, files, size, created_ms) VALUES (?,?,?,?,?,?)",
               ("bench@sha256:0", "bench", "sha256:0", b"", 0, now))
    scale = json.dumps({"min": 1, "max": 4, "target_queue_per_instance": 1, "idle_timeout_ms": 300000,
                        "max_concurrency": 4, "reserve": 0})
    tx.executemany(
        "INSERT INTO deployments (id, namespace, name, kind, definition_id, digest, scale, budget, desired,"
        " last_activity_ms, created_ms, updated_ms) VALUES (?, 'default', ?, 'pool', 'bench@sha256:0', 'sha256:0',"
        " ?, ?, 1, ?, ?, ?)",
        [(f"D{i:06d}", f"dep-{i:04d}", scale, json.dumps({"max_usd_per_day": 5.0}), now, now, now)
         for i in range(deployments)])
    states = ["succeeded"] * 90 + ["failed"] * 4 + ["queued"] * 4 + ["running"] * 2
    tx.executemany(
        "INSERT INTO tasks (id, namespace, deployment_id, deployment, state, input, root_task_id, seq, created_ms,"
        " updated_ms, finished_ms) VALUES (?, 'default', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(f"T{i:08d}", f"D{i % deployments:06d}", f"dep-{i % deployments:04d}", states[i % 100], f"task {i}",
          f"T{i:08d}", i + 1, now - (tasks - i) * 30, now, now if states[i % 100] in ("succeeded", "failed") else None)
         for i in range(tasks)])
    tx.executemany("INSERT INTO sessions (id, namespace, deployment, created_ms, updated_ms) VALUES (?,?,?,?,?)",
                   [(f"S{i:08d}", "default", f"dep-{i % deployments:04d}", now, now) for i in range(runs)])
    tx.executemany(
        "INSERT INTO conversations (id, session_id, namespace, deployment, created_ms, updated_ms)"
        " VALUES (?,?,?,?,?,?)",
        [(f"C{i:08d}", f"S{i:08d}", "default", f"dep-{i % deployments:04d}", now, now) for i in range(runs)])
    run_rows, msgs, spans = [], [], []
    for i in range(runs):
        t = tasks - runs + i
        state = states[t % 100]
        done = state in ("succeeded", "failed")
        start = now - (runs - i) * 30
        run_rows.append((f"R{i:08d}", "default", f"dep-{t % deployments:04d}", f"T{t:08d}", f"S{i:08d}",
                         f"C{i:08d}", f"R{i:08d}", f"X{i:08d}", "succeeded" if done else "running", start, start,
                         start + 20 if done else None))
        msgs += [(f"M{i:08d}a", f"C{i:08d}", f"R{i:08d}", 1, 0, "user", f"task {t}", None, None, start),
                 (f"M{i:08d}b", f"C{i:08d}", f"R{i:08d}", 2, 1, "assistant", "done", None, "fake", start + 10)]
        spans += [(f"P{i:08d}a", f"X{i:08d}", None, f"R{i:08d}", "agen.run", "ok", "{}", start, start + 20),
                  (f"P{i:08d}b", f"X{i:08d}", f"P{i:08d}a", f"R{i:08d}", "gen_ai.chat", "ok",
                   '{"gen_ai.response.model": "fake", "agen.latency_ms": 9}', start + 1, start + 10)]
    tx.executemany(
        "INSERT INTO runs (id, namespace, deployment, task_id, session_id, conversation_id, root_run_id, trace_id,"
        " status, started_ms, updated_ms, finished_ms, turns, input_tokens, output_tokens, cost_usd)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,1,100,10,0.0001)", run_rows)
    tx.executemany(
        "INSERT INTO messages (id, conversation_id, run_id, seq, turn, role, content, tool_calls, model, created_ms)"
        " VALUES (?,?,?,?,?,?,?,?,?,?)", msgs)
    tx.executemany(
        "INSERT INTO spans (id, trace_id, parent_id, run_id, namespace, name, status, attrs, started_ms, ended_ms)"
        " VALUES (?,?,?,?,'default',?,?,?,?,?)", spans)
    tx.executemany(
        "INSERT INTO approvals (id, namespace, deployment, run_id, task_id, tool, arguments, args_hash, created_ms)"
        " VALUES (?, 'default', ?, ?, ?, 'ws.run', '{\"command\": \"ls\"}', ?, ?)",
        [(f"A{i:04d}", f"dep-{i:04d}", f"R{i:08d}", None, f"h{i}", now) for i in range(50)])
    for i in range(5000):
        tx.event("default", "task.queued", deployment=f"dep-{i % deployments:04d}", data={"n": i})


async def measure(label: str, deployments: int, tasks: int, runs: int, repeat: int) -> dict[str, float]:
    from agen.client import Client
    from agen.hub.service import Hub
    from agen.store import SQLiteStore
    from agen.tui.app import AgenApp

    with tempfile.TemporaryDirectory() as tmp:
        store = await SQLiteStore.open(Path(tmp) / "bench.db")
        t0 = time.perf_counter()
        await store.write(lambda tx: populate(tx, deployments, tasks, runs))
        fill_s = time.perf_counter() - t0
        app = AgenApp(Client.in_process(Hub(store)), hub_label="bench", watch=False)
        out: dict[str, float] = {}
        start = time.perf_counter()
        async with app.run_test(size=(160, 50)) as pilot:

            async def loaded(before: dict[str, int]) -> None:
                """Until the shown screen has finished a load started after ``before`` was taken."""
                while True:
                    screen = app.screen
                    if getattr(screen, "loads", 0) > before.get(type(screen).__name__, 0) and all(
                            w.is_finished for w in app.workers if w.group == "load"):
                        return
                    await asyncio.sleep(0.0005)

            def counts() -> dict[str, int]:
                out: dict[str, int] = {}
                for stack in app._screen_stacks.values():  # every mode's screens
                    for sc in stack:
                        out[type(sc).__name__] = getattr(sc, "loads", 0)
                return out

            async def show(key: str, mode: str) -> None:
                if pressed:
                    await pilot.press(key)
                else:
                    await app.switch_mode(mode)

            from agen.tui.screens.fleet import FleetScreen

            while not (isinstance(app.screen, FleetScreen) and app.screen.deployments):
                await pilot.pause(0.001)
            out["first_paint_ms"] = (time.perf_counter() - start) * 1000
            switches: list[float] = []
            refreshes: list[float] = []
            pressed = False
            for key, mode in SCREENS:  # mount every screen once (first visits compose)
                before = counts()
                await show(key, mode)
                await loaded(before)
            for _ in range(repeat):
                for key, mode in SCREENS:
                    before = counts()
                    t = time.perf_counter()
                    await show(key, mode)
                    await loaded(before)
                    switches.append((time.perf_counter() - t) * 1000)
                    before = counts()
                    t = time.perf_counter()
                    reload = getattr(app.screen, "reload", None)
                    if callable(reload):
                        reload()
                    await loaded(before)
                    refreshes.append((time.perf_counter() - t) * 1000)
            out["switch_p50_ms"], out["switch_p95_ms"] = median(switches), pct(switches, 95)
            out["refresh_p50_ms"], out["refresh_p95_ms"] = median(refreshes), pct(refreshes, 95)
            for key, mode in SCREENS:
                before = counts()
                t = time.perf_counter()
                await show(key, mode)
                await loaded(before)
                out[f"switch_{mode}_ms"] = (time.perf_counter() - t) * 1000
            pressed = True  # the same switches through Pilot key presses (adds Pilot's own settling waits)
            keyed: list[float] = []
            for key, mode in SCREENS:
                before = counts()
                t = time.perf_counter()
                await show(key, mode)
                await loaded(before)
                keyed.append((time.perf_counter() - t) * 1000)
            out["switch_by_key_p50_ms"] = median(keyed)
        await store.close()
    print(f"{label}: {deployments} deployments, {tasks} tasks, {runs} runs (filled in {fill_s:.1f}s)")
    for k, v in out.items():
        print(f"  {k:<22} {v:8.1f}")
    return out


async def main_async(args: argparse.Namespace) -> None:
    print(f"machine: {machine()}")
    base = await measure("baseline", 10, 1000, 200, args.repeat)
    big = await measure("target", args.deployments, args.tasks, args.runs, args.repeat)
    print("ratios (target / baseline):")
    for k in ("first_paint_ms", "switch_p50_ms", "switch_p95_ms", "refresh_p50_ms", "refresh_p95_ms"):
        print(f"  {k:<22} {big[k] / max(base[k], 0.001):6.2f}x  ({big[k]:.1f} ms; target < 100 ms)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--deployments", type=int, default=1000)
    p.add_argument("--tasks", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=5)
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
