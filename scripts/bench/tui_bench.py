"""TUI responsiveness at fleet scale: first paint, screen switches and refreshes, as painted frames.

Two stores from the same run, same disk: a small baseline (10 deployments, 1,000 tasks)
and the target (1,000 deployments, 100,000 tasks, 20,000 runs with messages and spans,
50 pending approvals, 5,000 events). The TUI runs headless on the in-process client with its
event watcher, as `agen up` shows it. Every frame the compositor hands to the terminal is
rendered to bytes and timestamped (Paints), so the figures are frames, not worker ends:

- switch: key event sent through the driver -> first frame of the new screen (what it showed
  last; Textual's 50 ms mode-switch frame hold, App.delay_update, applies to first visits only).
- switch_fresh: same key event -> the frame after the screen's reload, if the switch reloaded (if the
  reload changed nothing visible, its end).
- refresh: a store commit (a task moves, its deployment scales, its run finishes, with events)
  -> the frame showing the screen's load from those events (the watcher's long poll included);
  if that load changed nothing visible, its end.

Target: switches and refreshes under 100 ms.

    python -m scripts.bench.tui_bench [--deployments 1000] [--tasks 100000] [--runs 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.bench._util import machine, median, pct

SCREENS = (
    ("t", "tasks"),
    ("a", "approvals"),
    ("r", "transcript"),
    ("w", "trace"),
    ("e", "events"),
    ("f", "fleet"),
)


def populate(tx: Any, deployments: int, tasks: int, runs: int) -> None:
    """Rows the way the Hub and runners write them, in bulk (ids sortable like ULIDs)."""
    now = tx.now_ms
    tx.execute(
        "INSERT INTO definitions (id, name, digest, files, size, created_ms) VALUES (?,?,?,?,?,?)",
        ("bench@sha256:0", "bench", "sha256:0", b"", 0, now),
    )
    scale = json.dumps(
        {
            "min": 1,
            "max": 4,
            "target_queue_per_instance": 1,
            "idle_timeout_ms": 300000,
            "max_concurrency": 4,
            "reserve": 0,
        }
    )
    tx.executemany(
        "INSERT INTO deployments (id, namespace, name, kind, definition_id, digest, scale, budget, desired,"
        " last_activity_ms, created_ms, updated_ms) VALUES (?, 'default', ?, 'pool', 'bench@sha256:0', 'sha256:0',"
        " ?, ?, 1, ?, ?, ?)",
        [
            (
                f"D{i:06d}",
                f"dep-{i:04d}",
                scale,
                json.dumps({"max_usd_per_day": 5.0}),
                now,
                now,
                now,
            )
            for i in range(deployments)
        ],
    )
    states = ["succeeded"] * 90 + ["failed"] * 4 + ["queued"] * 4 + ["running"] * 2
    tx.executemany(
        "INSERT INTO tasks (id, namespace, deployment_id, deployment, state, input, root_task_id, seq, created_ms,"
        " updated_ms, finished_ms) VALUES (?, 'default', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                f"T{i:08d}",
                f"D{i % deployments:06d}",
                f"dep-{i % deployments:04d}",
                states[i % 100],
                f"task {i}",
                f"T{i:08d}",
                i + 1,
                now - (tasks - i) * 30,
                now,
                now if states[i % 100] in ("succeeded", "failed") else None,
            )
            for i in range(tasks)
        ],
    )
    tx.executemany(
        "INSERT INTO sessions (id, namespace, deployment, created_ms, updated_ms) VALUES (?,?,?,?,?)",
        [(f"S{i:08d}", "default", f"dep-{i % deployments:04d}", now, now) for i in range(runs)],
    )
    tx.executemany(
        "INSERT INTO conversations (id, session_id, namespace, deployment, created_ms, updated_ms)"
        " VALUES (?,?,?,?,?,?)",
        [
            (f"C{i:08d}", f"S{i:08d}", "default", f"dep-{i % deployments:04d}", now, now)
            for i in range(runs)
        ],
    )
    run_rows, msgs, spans = [], [], []
    for i in range(runs):
        t = tasks - runs + i
        state = states[t % 100]
        done = state in ("succeeded", "failed")
        start = now - (runs - i) * 30
        run_rows.append(
            (
                f"R{i:08d}",
                "default",
                f"dep-{t % deployments:04d}",
                f"T{t:08d}",
                f"S{i:08d}",
                f"C{i:08d}",
                f"R{i:08d}",
                f"X{i:08d}",
                "succeeded" if done else "running",
                start,
                start,
                start + 20 if done else None,
            )
        )
        msgs += [
            (f"M{i:08d}a", f"C{i:08d}", f"R{i:08d}", 1, 0, "user", f"task {t}", None, None, start),
            (
                f"M{i:08d}b",
                f"C{i:08d}",
                f"R{i:08d}",
                2,
                1,
                "assistant",
                "done",
                None,
                "fake",
                start + 10,
            ),
        ]
        spans += [
            (
                f"P{i:08d}a",
                f"X{i:08d}",
                None,
                f"R{i:08d}",
                "agen.run",
                "ok",
                "{}",
                start,
                start + 20,
            ),
            (
                f"P{i:08d}b",
                f"X{i:08d}",
                f"P{i:08d}a",
                f"R{i:08d}",
                "gen_ai.chat",
                "ok",
                '{"gen_ai.response.model": "fake", "agen.latency_ms": 9}',
                start + 1,
                start + 10,
            ),
        ]
    tx.executemany(
        "INSERT INTO runs (id, namespace, deployment, task_id, session_id, conversation_id, root_run_id, trace_id,"
        " status, started_ms, updated_ms, finished_ms, turns, input_tokens, output_tokens, cost_usd)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,1,100,10,0.0001)",
        run_rows,
    )
    tx.executemany(
        "INSERT INTO messages (id, conversation_id, run_id, seq, turn, role, content, tool_calls, model, created_ms)"
        " VALUES (?,?,?,?,?,?,?,?,?,?)",
        msgs,
    )
    tx.executemany(
        "INSERT INTO spans (id, trace_id, parent_id, run_id, namespace, name, status, attrs, started_ms, ended_ms)"
        " VALUES (?,?,?,?,'default',?,?,?,?,?)",
        spans,
    )
    tx.executemany(
        "INSERT INTO approvals (id, namespace, deployment, run_id, task_id, tool, arguments, args_hash, created_ms)"
        " VALUES (?, 'default', ?, ?, ?, 'ws.run', '{\"command\": \"ls\"}', ?, ?)",
        [(f"A{i:04d}", f"dep-{i:04d}", f"R{i:08d}", None, f"h{i}", now) for i in range(50)],
    )
    for i in range(5000):
        tx.event("default", "task.queued", deployment=f"dep-{i % deployments:04d}", data={"n": i})


class Paints:
    """Every frame the app paints, with when, which screen, and that screen's ``loads`` at the time.

    Wraps ``App._display`` (what the compositor calls with each finished frame) and renders the
    frame to terminal bytes as a real terminal would pay for; headless Pilot otherwise drops it.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.log: list[tuple[float, Any, int]] = []
        self.changed = asyncio.Event()
        real = app._display

        def display(screen: Any, renderable: Any) -> None:
            real(screen, renderable)
            if renderable is None or app._batch_count:
                return
            render = getattr(renderable, "render_segments", None)
            if callable(render):
                render(app.console)
            self.log.append((time.perf_counter(), screen, getattr(screen, "loads", 0)))
            self.changed.set()

        app._display = display

    async def until(self, t0: float, cond: Any, limit_s: float = 30.0) -> float:
        """Milliseconds from ``t0`` to the first frame painted after ``t0`` for which cond(screen, loads) holds."""
        deadline = time.perf_counter() + limit_s
        seen = 0
        while time.perf_counter() < deadline:
            for t, screen, loads in self.log[seen:]:
                if t >= t0 and cond(screen, loads):
                    return (t - t0) * 1000
            seen = len(self.log)
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.changed.wait(),
                    timeout=max(0.001, min(0.5, deadline - time.perf_counter())),
                )
        raise TimeoutError("no matching frame was painted")

    async def loaded(
        self, t0: float, screen: Any, before: int, ended: asyncio.Task[float] | None = None
    ) -> float:
        """Milliseconds from ``t0`` to the frame showing ``screen``'s next load; if that load changed nothing
        on screen no frame comes, and the load's end (``ended``, watched from ``t0`` on) is the time."""
        done = await (ended or load_end(screen, before))
        try:
            return await self.until(
                t0, lambda s, loads: s is screen and loads > before, limit_s=0.3
            )
        except TimeoutError:
            return (done - t0) * 1000


async def load_end(screen: Any, before: int) -> float:
    """When ``screen.loads`` passes ``before`` (polled every millisecond from the call on)."""
    while screen.loads <= before:  # noqa: ASYNC110 (a counter, nothing to await)
        await asyncio.sleep(0.001)
    return time.perf_counter()


async def quiet(app: Any, settle_s: float = 0.05) -> None:
    """Until no load worker runs anywhere, then a short pause (measurements must not overlap)."""
    while any(not w.is_finished for w in app.workers if w.group in ("load", "detail")):  # noqa: ASYNC110
        await asyncio.sleep(0.002)
    await asyncio.sleep(settle_s)


def change(tx: Any, i: int) -> None:
    """What a busy fleet writes between two frames: the newest task moves, its deployment scales, its run
    finishes (events the way the Hub writes them, each naming its deployment, task and run)."""
    task = tx.one("SELECT id, deployment FROM tasks ORDER BY created_ms DESC, seq DESC LIMIT 1")
    run = tx.one("SELECT id FROM runs WHERE task_id = ?", (task["id"],))
    dep, run_id = task["deployment"], run["id"] if run else None
    tx.execute(
        "UPDATE tasks SET state = ?, updated_ms = ? WHERE id = ?",
        ("running" if i % 2 else "succeeded", tx.now_ms, task["id"]),
    )
    tx.execute("UPDATE deployments SET desired = ? WHERE name = ?", (1 + i % 2, dep))
    tx.event(
        "default", "task.started", deployment=dep, task_id=task["id"], run_id=run_id, data={"n": i}
    )
    tx.event("default", "deployment.scaled", deployment=dep, data={"replicas": 1 + i % 2})
    tx.event(
        "default", "run.finished", deployment=dep, task_id=task["id"], run_id=run_id, data={"n": i}
    )


async def measure(
    label: str, deployments: int, tasks: int, runs: int, repeat: int
) -> dict[str, float]:
    from textual import events

    from agen.client import Client
    from agen.hub.service import Hub
    from agen.store import SQLiteStore
    from agen.tui.app import AgenApp
    from agen.tui.screens.fleet import FleetScreen

    with tempfile.TemporaryDirectory() as tmp:
        store = await SQLiteStore.open(Path(tmp) / "bench.db")
        t0 = time.perf_counter()
        await store.write(lambda tx: populate(tx, deployments, tasks, runs))
        fill_s = time.perf_counter() - t0
        client = Client.in_process(Hub(store))
        app = AgenApp(client, hub_label="bench")  # with the event watcher, as `agen tui` runs
        out: dict[str, float] = {}
        start = time.perf_counter()
        async with app.run_test(size=(160, 50)) as pilot:
            paints = Paints(app)
            out["first_paint_ms"] = await paints.until(
                start, lambda s, loads: isinstance(s, FleetScreen) and loads > 0
            )

            def screen_of(mode: str) -> Any:
                return app._screen_stacks[mode][0]

            async def press(key: str) -> float:
                """A key event through the driver, as a terminal would send it (no Pilot settling)."""
                t = time.perf_counter()
                assert app._driver is not None
                app._driver.send_message(events.Key(key, key))
                return t

            for key, _ in SCREENS:  # mount every screen once (first visits compose)
                await pilot.press(key)
                await quiet(app)
            per: dict[str, dict[str, list[float]]] = {
                m: {"paint": [], "fresh": [], "refresh": []} for _, m in SCREENS
            }
            for i in range(repeat):
                for key, mode in SCREENS:
                    target = screen_of(mode)
                    before = target.loads
                    t = await press(key)
                    ended = asyncio.create_task(
                        load_end(target, before)
                    )  # a load the switch starts ends when
                    per[mode]["paint"].append(
                        await paints.until(t, lambda s, _l, tg=target: s is tg)
                    )
                    await asyncio.sleep(
                        0.1
                    )  # a screen may start its load after the switch's first frame
                    await quiet(app, 0)
                    fresh = (
                        target.loads > before
                    )  # did the switch load anything (cached content may be current)
                    per[mode]["fresh"].append(
                        await paints.loaded(t, target, before, ended)
                        if fresh
                        else per[mode]["paint"][-1]
                    )
                    ended.cancel()
                    await quiet(app)
                    before = target.loads
                    await store.write(lambda tx, n=i: change(tx, n))
                    t = (
                        time.perf_counter()
                    )  # committed: the watcher's long poll wakes, the screen refreshes
                    per[mode]["refresh"].append(await paints.loaded(t, target, before))
                    await quiet(app)
        await store.close()
    paint = [v for m in per.values() for v in m["paint"]]
    fresh = [v for m in per.values() for v in m["fresh"]]
    refresh = [v for m in per.values() for v in m["refresh"]]
    out["switch_p50_ms"], out["switch_p95_ms"] = median(paint), pct(paint, 95)
    out["switch_fresh_p50_ms"], out["switch_fresh_p95_ms"] = median(fresh), pct(fresh, 95)
    out["refresh_p50_ms"], out["refresh_p95_ms"] = median(refresh), pct(refresh, 95)
    print(
        f"{label}: {deployments} deployments, {tasks} tasks, {runs} runs (filled in {fill_s:.1f}s)"
    )
    for k, v in out.items():
        print(f"  {k:<22} {v:8.1f}")
    print(f"  {'per screen (p50/max)':<22} {'switch':>13} {'switch+fresh':>13} {'refresh':>13}")
    for mode, m in per.items():
        cols = "".join(
            f"{median(m[k]):7.1f}/{max(m[k]):5.0f}" for k in ("paint", "fresh", "refresh")
        )
        print(f"  {mode:<22} {cols}")
    return out


async def main_async(args: argparse.Namespace) -> None:
    print(f"machine: {machine()}")
    base = await measure("baseline", 10, 1000, 200, args.repeat)
    big = await measure("target", args.deployments, args.tasks, args.runs, args.repeat)
    print("ratios (target / baseline):")
    for k in (
        "first_paint_ms",
        "switch_p50_ms",
        "switch_p95_ms",
        "switch_fresh_p50_ms",
        "switch_fresh_p95_ms",
        "refresh_p50_ms",
        "refresh_p95_ms",
    ):
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
