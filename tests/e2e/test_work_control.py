"""Approvals, cancel, pause/resume and a SIGKILL mid-run, against real `agen up` processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.harness import Up, wait_until
from tests.fleet_helpers import write_bundle


def tool_bundle(
    root: Path,
    name: str,
    workdir: Path,
    command: str,
    *,
    permissions: dict[str, Any],
    scale: dict[str, Any] | None = None,
) -> Path:
    """A fake-model bundle whose one turn runs a shell command through the built-in workspace server."""
    workdir.mkdir(parents=True, exist_ok=True)
    bundle = write_bundle(
        root,
        name,
        script=[
            {"toolCalls": [{"name": "ws_run", "arguments": {"command": command}}]},
            {"text": "done"},
        ],
        config={
            "scale": scale or {"min": 1, "max": 1, "maxConcurrency": 4},
            "permissions": permissions,
        },
    )
    server = {"command": "agen", "args": ["mcp", "workspace", "--root", str(workdir)]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"ws": server}}))
    return bundle


def test_run_waiting_for_approval_says_how_and_approve_finishes_it(up: Up, tmp_path: Path) -> None:
    work = tmp_path / "work"
    bundle = tool_bundle(
        tmp_path / "gated",
        "gated",
        work,
        "echo approved >> effects.log",
        permissions={"ask": ["ws.run"], "default": "allow"},
    )
    up.agen("deploy", str(bundle))
    r = up.agen("run", "gated", "do it", check=False)
    assert r.returncode == 8 and "waiting for approval" in r.stderr and "agen approve" in r.stderr
    [pending] = up.json("approvals")["approvals"]
    assert pending["tool"] == "ws.run" and pending["arguments"] == {
        "command": "echo approved >> effects.log"
    }
    assert not (work / "effects.log").exists()
    approved = up.json("approve", pending["id"])
    assert approved["approval"]["state"] == "approved"
    assert up.agen("wait", pending["task_id"]).stdout.strip() == "done"
    assert (work / "effects.log").read_text() == "approved\n"
    assert up.json("approvals")["approvals"] == []
    assert [a["state"] for a in up.json("approvals", "--all")["approvals"]] == ["approved"]


def test_denied_approval_is_told_to_the_run_and_nothing_happens(up: Up, tmp_path: Path) -> None:
    work = tmp_path / "work"
    bundle = tool_bundle(
        tmp_path / "gated",
        "gated",
        work,
        "echo nope >> effects.log",
        permissions={"ask": ["ws.run"], "default": "allow"},
    )
    up.agen("deploy", str(bundle))
    task_id = up.agen("run", "gated", "do it", "--no-wait").stdout.strip()
    approval = wait_until(lambda: up.json("approvals")["approvals"], what="an approval")[0]
    assert up.json("deny", approval["id"], "--note", "not today")["approval"]["state"] == "denied"
    up.agen("wait", task_id, check=False)
    assert not (work / "effects.log").exists()
    assert up.json("tasks")["tasks"][0]["state"] in ("succeeded", "failed")


def test_cancel_stops_a_running_task_and_pause_holds_a_queued_one(up: Up, tmp_path: Path) -> None:
    bundle = tool_bundle(
        tmp_path / "slow",
        "slow",
        tmp_path / "work",
        "sleep 30",
        permissions={"default": "allow"},
        scale={"min": 1, "max": 1, "maxConcurrency": 1},
    )
    up.agen("deploy", str(bundle))
    running = up.agen("run", "slow", "one", "--no-wait").stdout.strip()
    queued = up.agen("run", "slow", "two", "--no-wait").stdout.strip()
    wait_until(
        lambda: up.json("wait", running, "--timeout", "1ms")["state"] == "running",
        what="task running",
    )
    r = up.agen("wait", running, "--timeout", "1ms", check=False)
    assert r.returncode == 8 and "still running" in r.stderr  # --timeout ran out: the task goes on
    held = up.json("pause", queued, "--reason", "not yet")
    assert held["held"] and held["hold_reason"] == "not yet"
    cancelled = up.json("cancel", running)
    assert cancelled["state"] == "cancelled"
    r = up.agen("wait", running, check=False)
    assert r.returncode == 1 and "cancelled" in r.stderr
    [t] = [t for t in up.json("tasks", "--state", "queued")["tasks"] if t["id"] == queued]
    assert t["held"]
    up.json("resume", queued)
    wait_until(
        lambda: up.json("wait", queued, "--timeout", "1ms")["state"] == "running",
        what="resumed task runs",
    )
    up.agen("cancel", queued)


def test_sigkill_mid_run_then_restart_finishes_every_task_once_without_repeating_effects(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    # Each effect blocks until the test creates `go` (after the kill): the tasks are certainly mid-run when
    # they are counted, however slow the machine is.
    bundle = tool_bundle(
        tmp_path / "effects",
        "effects",
        work,
        "echo x >> effects.log; while [ ! -e go ]; do sleep 0.05; done",
        permissions={"default": "allow"},
        scale={"min": 1, "max": 1, "maxConcurrency": 3},
    )
    first = Up(tmp_path / "home").start()
    try:
        first.agen("deploy", str(bundle))
        ids = [
            first.agen("run", "effects", f"task {i}", "--no-wait").stdout.strip() for i in range(5)
        ]
        wait_until(
            lambda: (
                (work / "effects.log").exists()
                and len((work / "effects.log").read_text().splitlines()) >= 2
            ),
            what="effects started",
        )
        states = {t["id"]: t["state"] for t in first.json("tasks")["tasks"]}
        assert sum(s in ("leased", "running") for s in states.values()) >= 2
    finally:
        first.kill()
    (work / "go").touch()
    second = Up(tmp_path / "home", port=first.port).start()
    try:
        for task_id in ids:
            second.agen("wait", task_id, "--timeout", "60s", check=False)
        tasks = {t["id"]: t for t in second.json("tasks")["tasks"]}
        assert {tasks[i]["state"] for i in ids} == {"succeeded"}
        assert len((work / "effects.log").read_text().splitlines()) == len(ids)
        runs = second.http("ListTasks", {"limit": 100}).json()["tasks"]
        assert len({t["run_id"] for t in runs if t["id"] in ids}) == len(ids)
    finally:
        second.stop()
