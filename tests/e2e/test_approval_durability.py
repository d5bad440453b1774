"""Approval waits survive real `agen up` restarts (SIGKILL and `agen down`), and the decision resumes each run."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import AGEN, Up, wait_until
from tests.fleet_helpers import write_bundle

TEST_SERVER = str(Path(__file__).parent.parent / "fixtures" / "mcp_test_server.py")
TASKS = 20
TERMINAL = ("succeeded", "failed", "cancelled", "expired")


def gated(root: Path, effects: Path) -> Path:
    """One asked call of a side-effecting tool that appends the task's id to ``effects``, then an answer.
    Four slots for twenty tasks: the waits must hold none."""
    bundle = write_bundle(
        root,
        "gated",
        script=[
            {"toolCalls": [{"name": "t_append_task", "arguments": {"path": str(effects)}}]},
            {"text": "done"},
        ],
        config={
            "kind": "pool",
            "scale": {"min": 1, "max": 1, "maxConcurrency": 4},
            "permissions": {"ask": ["t.append_task"], "default": "allow"},
        },
        sandbox={"filesystem": {"write": [str(effects.parent)]}},  # the server appends there
    )
    server = {"command": sys.executable, "args": [TEST_SERVER]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"t": server}}))
    return bundle


def call(up: Up, method: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    resp = up.http(method, body)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def pending(up: Up) -> dict[str, str]:
    """task id -> its pending approval id."""
    approvals = call(up, "ListApprovals", {"limit": 1000})["approvals"]
    return {a["task_id"]: a["id"] for a in approvals}


def states(up: Up, ids: list[str]) -> dict[str, str]:
    tasks = call(up, "ListTasks", {"deployment": "gated", "limit": 1000})["tasks"]
    return {t["id"]: t["state"] for t in tasks if t["id"] in ids}


def all_waiting(up: Up, ids: list[str]) -> bool:
    return set(states(up, ids).values()) == {"waiting"} and set(pending(up)) == set(ids)


@pytest.mark.slow
def test_twenty_approval_waits_survive_sigkills_and_agen_down_and_each_call_runs_at_most_once(
    tmp_path: Path,
) -> None:
    effects = tmp_path / "effects.log"
    up = Up(tmp_path / "home").start()
    try:
        up.agen("deploy", str(gated(tmp_path / "gated", effects)))
        ids = [
            call(up, "SubmitTask", {"deployment": "gated", "input": f"job {i}"})["task"]["id"]
            for i in range(TASKS)
        ]
        wait_until(lambda: all_waiting(up, ids), 60, "all twenty tasks to wait for their approvals")
        approvals = pending(up)

        for restart in ("kill", "kill", "down", "kill", "kill", "down", "kill"):
            if restart == "kill":
                up.kill()
            else:
                down = up.agen("down")
                assert down.returncode == 0
                assert up.proc is not None and up.proc.wait(30) == 0
            up.start()
            assert all_waiting(up, ids), states(up, ids)  # nothing was cancelled, expired or re-run
            assert pending(up) == approvals
        assert not effects.exists()

        approved, denied = ids[::2], ids[1::2]
        for task_id in approved:
            call(up, "DecideApproval", {"id": approvals[task_id], "approve": True})
        for task_id in denied:
            call(up, "DecideApproval", {"id": approvals[task_id], "approve": False, "note": "no"})
        wait_until(lambda: set(states(up, ids).values()) <= set(TERMINAL), 90, "every task to end")
        assert set(states(up, ids).values()) == {"succeeded"}
        for task_id in ids:  # deciding again is a conflict, not a second run
            assert (
                up.http("DecideApproval", {"id": approvals[task_id], "approve": True}).status_code
                == 409
            )
    finally:
        up.stop()

    assert "Traceback" not in up.log.read_text()
    ran = effects.read_text().split()
    assert sorted(ran) == sorted(approved)  # each approved call ran exactly once, no denied one ran
    db = sqlite3.connect(up.home / "agen.db")
    try:
        ends = db.execute(
            "SELECT task_id, COUNT(*) FROM events WHERE type IN"
            " ('task.succeeded', 'task.failed', 'task.cancelled', 'task.expired') GROUP BY task_id"
        ).fetchall()
        runs = db.execute("SELECT task_id, COUNT(*) FROM runs GROUP BY task_id").fetchall()
        told = db.execute(
            "SELECT ru.task_id, m.content FROM messages m JOIN runs ru ON ru.id = m.run_id"
            " WHERE m.role = 'tool'"
        ).fetchall()
    finally:
        db.close()
    assert dict(ends) == dict.fromkeys(ids, 1)  # exactly one terminal state each
    assert dict(runs) == dict.fromkeys(ids, 1)  # each run resumed, never started over
    assert dict(told) == {
        **dict.fromkeys(approved, "appended"),
        **dict.fromkeys(denied, "denied by the approver: no"),
    }


def own_approval(up: Up, effects: Path, bundle_root: Path, token: str) -> tuple[str, str]:
    """``token`` submits a task of the gated bundle; returns (task id, its pending approval id)."""
    if up.http("GetDeployment", {"name": "gated"}).status_code != 200:
        up.agen("deploy", str(gated(bundle_root, effects)))
    resp = up.http("SubmitTask", {"deployment": "gated", "input": "mine"}, token=token)
    assert resp.status_code == 200, resp.text
    task_id = resp.json()["task"]["id"]
    approval = wait_until(lambda: pending(up).get(task_id), 30, "the approval")
    return task_id, approval


def second_token(up: Up, name: str) -> str:
    return str(
        up.json("token", "create", "--scope", "operator", "--scope", "approver", "--name", name)[
            "token"
        ]
    )


def test_a_second_token_cannot_approve_its_own_task_over_http_but_the_local_admin_and_others_can(
    up: Up, tmp_path: Path
) -> None:
    alice, bob = second_token(up, "alice"), second_token(up, "bob")
    effects = tmp_path / "effects.log"
    task_id, approval = own_approval(up, effects, tmp_path / "gated", alice)
    refused = up.http("DecideApproval", {"id": approval, "approve": True}, token=alice)
    assert refused.status_code == 403 and "cannot approve it" in refused.json()["error"]["message"]
    assert (
        up.http("DecideApproval", {"id": approval, "approve": True}, token=bob).status_code == 200
    )
    assert up.agen("wait", task_id).stdout.strip() == "done"

    mine, own = own_approval(
        up, effects, tmp_path / "gated", up.local()["token"]
    )  # the local admin's own work
    assert up.json("approve", own)["approval"]["state"] == "approved"
    assert up.agen("wait", mine).stdout.strip() == "done"


def test_allow_self_approval_lets_a_token_approve_its_own_task(tmp_path: Path) -> None:
    up = Up(tmp_path / "home", args=("--allow-self-approval",)).start()
    try:
        alice = second_token(up, "alice")
        task_id, approval = own_approval(up, tmp_path / "effects.log", tmp_path / "gated", alice)
        assert (
            up.http("DecideApproval", {"id": approval, "approve": True}, token=alice).status_code
            == 200
        )
        assert up.agen("wait", task_id).stdout.strip() == "done"
    finally:
        up.stop()


def test_agen_down_names_the_running_task_it_waits_for_and_not_the_one_waiting_for_approval(
    up: Up, tmp_path: Path
) -> None:
    from tests.e2e.test_work_control import tool_bundle

    waiting, _ = own_approval(up, tmp_path / "effects.log", tmp_path / "gated", up.local()["token"])
    # The tool holds its step open until the test creates `go`: the task is certainly running while
    # `agen down` drains, however slow the machine is.
    slow = tool_bundle(
        tmp_path / "slow",
        "slow",
        tmp_path / "work",
        "touch started; while [ ! -e go ]; do sleep 0.05; done",
        permissions={"default": "allow"},
    )
    up.agen("deploy", str(slow))
    running = up.agen("run", "slow", "go", "--no-wait").stdout.strip()
    wait_until(lambda: (tmp_path / "work" / "started").exists(), 30, "the slow tool to start")
    said = f"waiting for 1 running task(s) to finish their current step: {running}"
    down = subprocess.Popen(
        [AGEN, "down"], env=up.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: said in up.log.read_text(), 60, "agen up to name the task it drains")
        (tmp_path / "work" / "go").touch()
        assert down.wait(60) == 0
    finally:
        if down.poll() is None:
            down.kill()
    assert up.proc is not None and up.proc.wait(30) == 0
    assert waiting not in up.log.read_text()
