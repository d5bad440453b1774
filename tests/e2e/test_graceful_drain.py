"""SIGTERM drains a real `agen up`: each running run finishes its current step, its task goes back to the
queue (no attempt counted), and a restarted `agen up` finishes it from its checkpoint."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.e2e.harness import Up, wait_until
from tests.fleet_helpers import write_bundle

STEPS = 6


def stepping_bundle(root: Path, workdir: Path) -> Path:
    """Six turns, each a side effect that appends its number to effects.log and takes 1.5 s."""
    workdir.mkdir(parents=True, exist_ok=True)
    turns = [
        {
            "toolCalls": [
                {"name": "ws_run", "arguments": {"command": f"echo {i} >> effects.log; sleep 1.5"}}
            ]
        }
        for i in range(1, STEPS + 1)
    ]
    bundle = write_bundle(
        root,
        "stepper",
        script=[*turns, {"text": "all steps done"}],
        config={"scale": {"min": 1, "max": 1}, "permissions": {"default": "allow"}},
    )
    server = {"command": "agen", "args": ["mcp", "workspace", "--root", str(workdir)]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"ws": server}}))
    return bundle


def task_row(home: Path, task_id: str) -> dict[str, object]:
    with sqlite3.connect(home / "agen.db") as db:
        db.row_factory = sqlite3.Row
        row = db.execute(
            "SELECT state, attempts, lease_id FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()
    return dict(row)


@pytest.mark.parametrize("backend", ["inproc", "process"])
def test_sigterm_stops_runs_after_their_current_step_and_a_restart_finishes_them(
    tmp_path: Path, backend: str
) -> None:
    work = tmp_path / "work"
    home = tmp_path / "home"
    up = Up(home, args=("--backend", backend)).start()
    try:
        up.agen("deploy", str(stepping_bundle(tmp_path / "stepper", work)))
        task_id = up.agen("run", "stepper", "go", "--no-wait").stdout.strip()
        log = work / "effects.log"
        wait_until(lambda: log.exists() and log.read_text().count("\n") >= 2, what="two steps done")
        assert up.proc is not None
        sent = time.monotonic()
        up.proc.send_signal(signal.SIGTERM)
        up.proc.wait(20)
        took = time.monotonic() - sent
    finally:
        up.stop()
    done_steps = log.read_text().split()
    assert took < 6, (
        f"the drain took {took:.1f}s; the run had ~{1.5 * (STEPS - len(done_steps)):.0f}s left"
    )
    assert len(done_steps) < STEPS
    row = task_row(home, task_id)
    assert row["state"] == "queued" and row["attempts"] == 0 and row["lease_id"] is None
    assert "drain" in (home / "up.log").read_text()

    again = Up(home, args=("--backend", backend)).start()
    try:
        r = again.agen("wait", task_id, "--timeout", "60s")
        assert r.stdout.strip() == "all steps done"
    finally:
        again.stop()
    assert log.read_text().split() == [
        str(i) for i in range(1, STEPS + 1)
    ]  # each step ran exactly once


def child_pids(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        out.extend(int(c) for c in children)
    return out


def test_process_hosts_die_with_a_killed_agen_up(tmp_path: Path) -> None:
    up = Up(tmp_path / "home", args=("--backend", "process")).start()
    try:
        up.agen(
            "deploy",
            str(write_bundle(tmp_path / "echo", "echo", config={"scale": {"min": 1, "max": 1}})),
        )
        assert up.proc is not None
        proc = up.proc
        hosts = wait_until(
            lambda: [
                p
                for p in child_pids(proc.pid)
                if b"host\x00serve" in Path(f"/proc/{p}/cmdline").read_bytes()
            ],
            what="an agen host serve child",
        )
        environ = Path(f"/proc/{hosts[0]}/environ").read_bytes().split(b"\0")
        assert any(v.startswith(b"AGEN_HOST_TOKEN=") for v in environ)
        assert b"AGEN_HOST_TOKEN" not in Path(f"/proc/{hosts[0]}/cmdline").read_bytes()
        up.kill()
        wait_until(
            lambda: not any(Path(f"/proc/{p}").exists() and "Z" not in _state(p) for p in hosts),
            timeout_s=10,
            what="the host to die with agen up",
        )
    finally:
        up.stop()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0]
    except OSError:
        return "Z"
