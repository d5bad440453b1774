"""`agen down` says what the drain waits for, `--timeout` cancels what still runs gracefully, and
`--force` stops at once with every task resuming from its checkpoint on the next start."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.e2e.harness import AGEN, Up, wait_until
from tests.fleet_helpers import write_bundle

TEST_SERVER = str(Path(__file__).parent.parent / "fixtures" / "mcp_test_server.py")


def gated_step(root: Path, gate: Path) -> Path:
    """One tool call that lasts until ``gate`` exists, then an answer."""
    bundle = write_bundle(
        root,
        "slow",
        script=[
            {"toolCalls": [{"name": "t_wait_file", "arguments": {"path": str(gate)}}]},
            {"text": "through"},
        ],
        config={"scale": {"min": 1, "max": 1}, "permissions": {"default": "allow"}},
    )
    server = {"command": sys.executable, "args": [TEST_SERVER]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"t": server}}))
    return bundle


def in_tool(up: Up) -> str:
    """Start a task of the gated bundle and return its id once its run is under way (the fake
    model answers at once: the run is in its tool call, waiting on the gate)."""
    task_id = up.agen("run", "slow", "go", "--no-wait").stdout.strip()
    wait_until(
        lambda: any(
            r["task_id"] == task_id and r["status"] == "running"
            for r in up.http("GetActivity").json()["runs"]
        ),
        60,
        "the run to start",
    )
    return task_id


def state(home: Path, task_id: str) -> str:
    with sqlite3.connect(home / "agen.db") as db:
        (value,) = db.execute("SELECT state FROM tasks WHERE id = ?", (task_id,)).fetchone()
    return str(value)


def test_down_says_what_it_waits_for_and_timeout_cancels_the_rest_gracefully(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    up = Up(home).start()
    try:
        up.agen("deploy", str(gated_step(tmp_path / "slow", tmp_path / "never")))
        task_id = in_tool(up)

        down = subprocess.run(
            [AGEN, "down", "--timeout", "7s"], env=up.env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip

        assert down.returncode == 0, down.stderr
        assert down.stdout.strip() == "stopped"
        assert f"slow: task {task_id} (running, " in down.stderr, down.stderr
        assert "--timeout reached; cancelling 1 run(s) gracefully" in down.stderr, down.stderr
        assert "still finishing their current step; the longest: slow" in down.stderr
        assert up.proc is not None and up.proc.wait(30) == 0
        assert state(home, task_id) == "cancelled"
    finally:
        up.stop()


def test_down_force_stops_at_once_and_the_task_resumes_on_the_next_start(
    tmp_path: Path,
) -> None:
    home, gate = tmp_path / "home", tmp_path / "gate"
    up = Up(home).start()
    try:
        up.agen("deploy", str(gated_step(tmp_path / "slow", gate)))
        task_id = in_tool(up)

        down = up.agen("down", "--force", "--json")

        assert json.loads(down.stdout) == {"stopped": True, "url": up.url, "forced": True}
        assert "1 run(s) resume from their last checkpoint on the next start" in down.stderr
        assert up.proc is not None and up.proc.wait(30) != 0  # cut, not drained
        assert state(home, task_id) == "running"  # the next start takes it back
    finally:
        up.stop()
    gate.touch()
    again = Up(home).start()
    try:
        assert again.agen("wait", task_id, "--timeout", "90s").stdout.strip() == "through"
    finally:
        again.stop()
