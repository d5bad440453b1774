"""A delegation tree through a real `agen up`: a coordinator starts 3 researchers, each of which
starts 2 joined fetchers (scripted fake models); the fetchers' side effect appends their task id
to a file. Once straight through (lineage, one trace), and once with `agen up` SIGKILLed at ten
points of the tree, polled from the store, and restarted each time."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Up, wait_until
from tests.fleet_helpers import write_bundle

TEST_SERVER = str(Path(__file__).parent.parent / "fixtures" / "mcp_test_server.py")


def _starts(agent: str, n: int) -> dict[str, Any]:
    return {
        "toolCalls": [
            {"name": "start_agent", "arguments": {"agent": agent, "input": f"part {i}"}}
            for i in range(n)
        ]
    }


def _gate(path: Path) -> dict[str, Any]:
    return {"toolCalls": [{"name": "t_wait_file", "arguments": {"path": str(path)}}]}


def _finish(summary: str) -> dict[str, Any]:
    return {"toolCalls": [{"name": "finish", "arguments": {"summary": summary}}]}


def deploy_tree(up: Up, root: Path, effects: Path, gates: list[Path]) -> None:
    """fetcher: side effect, gate 0, finish; researcher: 2 fetchers, gate 1, finish;
    coordinator: 3 researchers, gate 2, finish."""
    specs: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]] = [
        (
            "fetcher",
            [
                {"toolCalls": [{"name": "t_append_task", "arguments": {"path": str(effects)}}]},
                _gate(gates[0]),
                _finish("fetched"),
            ],
            [],
        ),
        (
            "researcher",
            [_starts("fetcher", 2), _gate(gates[1]), _finish("researched")],
            [{"name": "fetcher"}],
        ),
        (
            "coordinator",
            [_starts("researcher", 3), _gate(gates[2]), _finish("coordinated")],
            [{"name": "researcher"}],
        ),
    ]
    for name, script, delegates in specs:
        config: dict[str, Any] = {
            "kind": "pool",
            "scale": {"min": 0, "max": 3},
            "permissions": {"default": "allow"},
        }
        if delegates:
            config["delegates"] = delegates
        bundle = write_bundle(root / name, name, script=script, config=config)
        server = {"command": sys.executable, "args": [TEST_SERVER]}
        (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"t": server}}))
        up.agen("deploy", str(bundle))


def db_rows(home: Path, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
    with sqlite3.connect(f"file:{home / 'agen.db'}?mode=ro", uri=True, timeout=10) as db:
        db.row_factory = sqlite3.Row
        return list(db.execute(sql, params))


def count(home: Path, sql: str) -> int:
    try:
        return int(db_rows(home, sql)[0][0])
    except sqlite3.OperationalError:  # the store is being created or migrated
        return 0


def check_tree(up: Up, root_id: str, effects: Path) -> None:
    tasks = up.http("ListTasks", {"limit": 1000}).json()["tasks"]
    assert len(tasks) == 10 and {t["state"] for t in tasks} == {"succeeded"}
    by_id = {t["id"]: t for t in tasks}
    root = by_id[root_id]
    researchers = [t for t in tasks if t["deployment"] == "researcher"]
    fetchers = [t for t in tasks if t["deployment"] == "fetcher"]
    assert len(researchers) == 3 and len(fetchers) == 6
    assert root["depth"] == 0 and root["parent_task_id"] is None
    for t in researchers:
        assert (t["parent_task_id"], t["root_task_id"], t["depth"]) == (root_id, root_id, 1)
        assert t["root_run_id"] == root["run_id"] and t["parent_run_id"] == root["run_id"]
    for t in fetchers:
        parent = by_id[t["parent_task_id"]]
        assert parent["deployment"] == "researcher"
        assert (t["root_task_id"], t["depth"]) == (root_id, 2)
        assert t["parent_run_id"] == parent["run_id"] and t["root_run_id"] == root["run_id"]
    for r in researchers:
        assert sum(1 for f in fetchers if f["parent_task_id"] == r["id"]) == 2
    # every side effect exactly once: one line per fetcher
    assert sorted(effects.read_text().split()) == sorted(f["id"] for f in fetchers)
    # no child started twice: one task per call key, one counted delegation per call
    keys = [t["idempotency_key"] for t in researchers + fetchers]
    assert len(set(keys)) == 9
    assert count(up.home, "SELECT COUNT(*) FROM delegation_calls") == 9
    # every task ended once
    ends = db_rows(
        up.home,
        "SELECT task_id, COUNT(*) AS n FROM events WHERE type IN"
        " ('task.succeeded', 'task.failed', 'task.cancelled', 'task.expired') GROUP BY task_id",
    )
    assert {e["task_id"]: e["n"] for e in ends} == {t["id"]: 1 for t in tasks}
    # no parent missed a child's result: each child's end is in its parent's run, once
    for parent in [root, *researchers]:
        notes = db_rows(
            up.home,
            "SELECT m.content FROM messages m JOIN runs r ON r.id = m.run_id WHERE r.task_id = ?"
            " AND m.role = 'user' AND m.content LIKE '[Child task %'",
            (parent["id"],),
        )
        kids = sorted(t["id"] for t in tasks if t["parent_task_id"] == parent["id"])
        assert sorted(n["content"].split()[2] for n in notes) == kids


@pytest.mark.slow
def test_a_coordinator_tree_of_ten_tasks_completes_with_lineage_and_one_trace(
    tmp_path: Path,
) -> None:
    effects = tmp_path / "effects.log"
    gates = [tmp_path / f"gate{i}" for i in range(3)]
    for g in gates:
        g.touch()
    up = Up(tmp_path / "home").start()
    try:
        deploy_tree(up, tmp_path, effects, gates)
        root_id = up.agen("run", "coordinator", "go", "--no-wait").stdout.strip()
        result = up.agen("wait", root_id, "--timeout", "120s", check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "coordinated"
        check_tree(up, root_id, effects)
        tree = up.json("tree", root_id)  # agen tree shows the whole tree: 1 + 3 + 3×2 tasks
        assert len(tree["tasks"]) == 10
        assert {n["task"]["state"] for n in tree["tasks"]} == {"succeeded"}
        shown = up.agen("tree", root_id).stdout
        assert sum(1 for n in tree["tasks"] if n["task"]["id"][-6:] in shown) == 10
        trace = up.json("trace", root_id)
        assert len(trace["runs"]) == 10  # the whole tree is one trace
        assert {s["trace_id"] for s in trace["spans"]} == {trace["trace_id"]}
        spans = {s["id"]: s for s in trace["spans"]}
        under = {  # a run span's parent: its caller's tool span, or (resumed) its own earlier span
            s["run_id"]: spans[s["parent_id"]]
            for s in trace["spans"]
            if s["name"] == "agen.run"
            and s["parent_id"] is not None
            and spans[s["parent_id"]]["name"] == "agen.tool"
        }
        assert len(under) == 9  # each child's run hangs under its caller's start_agent tool span
        assert {p["attrs"]["agen.tool.name"] for p in under.values()} == {"start_agent"}
    finally:
        up.stop()


@pytest.mark.slow
def test_ten_sigkills_of_agen_up_during_a_delegation_tree_lose_and_repeat_nothing(
    tmp_path: Path,
) -> None:
    home, effects = tmp_path / "home", tmp_path / "effects.log"
    gates = [tmp_path / f"gate{i}" for i in range(3)]
    tasks = "SELECT COUNT(*) FROM tasks"
    done = "SELECT COUNT(*) FROM tasks WHERE state = 'succeeded'"

    def lines() -> int:
        return len(effects.read_text().split()) if effects.exists() else 0

    # (what to wait for before the kill, the gate to open after it)
    points: list[tuple[str, Any, Path | None]] = [
        ("the first researcher exists", lambda: count(home, tasks) >= 2, None),
        ("every researcher exists", lambda: count(home, tasks) >= 4, None),
        ("some fetchers exist", lambda: count(home, tasks) >= 7, None),
        ("every fetcher exists", lambda: count(home, tasks) >= 10, None),
        ("3 fetchers did their side effect", lambda: lines() >= 3, None),
        ("every fetcher did its side effect", lambda: lines() >= 6, gates[0]),
        ("3 fetchers ended", lambda: count(home, done) >= 3, None),
        ("every fetcher ended", lambda: count(home, done) >= 6, gates[1]),
        ("2 researchers ended", lambda: count(home, done) >= 8, None),
        ("every researcher ended", lambda: count(home, done) >= 9, gates[2]),
    ]
    up = Up(home).start()
    try:
        deploy_tree(up, tmp_path, effects, gates)
        root_id = up.agen("run", "coordinator", "go", "--no-wait").stdout.strip()
        for what, reached, gate in points:
            wait_until(reached, timeout_s=90, what=what)
            up.kill()
            if gate is not None:
                gate.touch()
            up = Up(home).start()
        result = up.agen("wait", root_id, "--timeout", "120s", check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "coordinated"
        check_tree(up, root_id, effects)
    finally:
        up.stop()
