"""On-behalf tokens (seed 000 §10): an agent working for people acts, per call, as the submitter of the
running task it names, with the scopes both hold; never as an admin, never deciding approvals, and
never for a task a trigger started."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.harness import Up, wait_until
from tests.e2e.test_nest_loss import gate_bundle


def _post(
    up: Up, method: str, body: dict[str, Any], token: str, task: str | None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    if task:
        headers["X-Agen-Task"] = task
    return httpx.post(f"{up.url}/v1/{method}", json=body, headers=headers, timeout=30)


def test_an_on_behalf_token_acts_only_as_the_person_behind_a_running_task(tmp_path: Path) -> None:
    gate, started = tmp_path / "gate", tmp_path / "started"
    up = Up(tmp_path / "home").start()
    try:
        config: dict[str, object] = {
            "scale": {"min": 1, "max": 1, "maxConcurrency": 4},
            "triggers": [{"name": "hook", "type": "webhook"}],
        }
        up.agen("deploy", str(gate_bundle(tmp_path / "bundle", gate, started, config)))
        alice = up.json(
            "token", "create", "--scope", "operator", "--scope", "approver", "--name", "alice"
        )
        agent = up.json(
            "token",
            "create",
            "--scope",
            "operator",
            "--scope",
            "approver",
            "--on-behalf",
            "--deployment",
            "gate",
        )["token"]
        admin_agent = up.json(
            "token", "create", "--scope", "admin", "--on-behalf", "--deployment", "default/gate"
        )["token"]

        by_alice = _post(
            up, "SubmitTask", {"deployment": "gate", "input": "a"}, alice["token"], None
        )
        by_admin = up.http("SubmitTask", {"deployment": "gate", "input": "b"})
        hook = up.http("CreateWebhookSecret", {"deployment": "gate", "trigger": "hook"}).json()
        fired = httpx.post(
            f"{up.url}/hooks/default/gate/hook",
            content=b"{}",
            headers={"Authorization": f"Bearer {hook['secret']}"},
            timeout=30,
        )
        assert fired.status_code < 300, fired.text
        alice_task, admin_task = by_alice.json()["task"]["id"], by_admin.json()["task"]["id"]
        wait_until(
            lambda: started.exists() and len(started.read_text().split()) == 3, 120, "3 running"
        )
        db = sqlite3.connect(up.home / "agen.db")
        hook_task = db.execute(
            "SELECT id FROM tasks WHERE submitted_by LIKE 'trigger:%'"
        ).fetchone()[0]

        # Without a running task named, nothing; with one, the call is alice's.
        bare = _post(up, "ListTasks", {}, agent, None)
        assert bare.status_code == 403 and "X-Agen-Task" in bare.json()["error"]["message"]
        stream = httpx.get(  # the event stream follows the same rule as the RPCs
            f"{up.url}/api/v1/events", headers={"Authorization": f"Bearer {agent}"}, timeout=30
        )
        assert stream.status_code == 403 and "X-Agen-Task" in stream.json()["error"]["message"]
        assert _post(up, "ListTasks", {}, agent, alice_task).status_code == 200
        child = _post(up, "SubmitTask", {"deployment": "gate", "input": "c"}, agent, alice_task)
        assert child.status_code == 200, child.text
        by = db.execute(
            "SELECT submitted_by FROM tasks WHERE id = ?", (child.json()["task"]["id"],)
        ).fetchone()[0]
        assert by == f"token:{alice['info']['id']}"  # made as alice

        decide = _post(up, "DecideApproval", {"id": "x", "decision": "approve"}, agent, alice_task)
        assert decide.status_code == 403 and "approvals" in decide.json()["error"]["message"]
        # Acting for the local admin, the admin scope does not pass through.
        mint = _post(up, "CreateToken", {"scopes": ["viewer"]}, admin_agent, admin_task)
        assert mint.status_code == 403 and "admin" in mint.json()["error"]["message"]
        # A trigger's task has no person to act for; a finished task acts for nobody.
        trig = _post(up, "ListTasks", {}, agent, hook_task)
        assert trig.status_code == 403 and "not a person" in trig.json()["error"]["message"]
        gate.touch()
        up.json("wait", alice_task, "--timeout", "2m")
        done = _post(up, "ListTasks", {}, agent, alice_task)
        assert done.status_code == 403 and "not running" in done.json()["error"]["message"]
    finally:
        gate.touch()
        up.stop()
