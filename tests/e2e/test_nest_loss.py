"""Nest loss (seed 000 §5): a SIGKILLed Nest's leases expire and its task runs on another Nest; the lost
Nest's late CompleteTask is refused by fencing; the task ends exactly once."""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
from pathlib import Path

from tests.e2e.harness import Up, wait_until
from tests.e2e.test_nest_run import Nest
from tests.fleet_helpers import write_bundle

TEST_SERVER = str(Path(__file__).parent.parent / "fixtures" / "mcp_test_server.py")


def gate_bundle(
    root: Path, gate: Path, started: Path, config: dict[str, object] | None = None
) -> Path:
    """A task whose one tool call waits for the file ``gate`` (after noting its start in ``started``)."""
    bundle = write_bundle(
        root,
        "gate",
        script=[
            {
                "toolCalls": [
                    {
                        "name": "t_wait_for_gate",
                        "arguments": {"gate": str(gate), "started": str(started)},
                    }
                ]
            },
            {"text": "done after the gate"},
        ],
        config={
            "kind": "pool",
            "scale": {"min": 1, "max": 1},
            "permissions": {"default": "allow"},
            **(config or {}),
        },
    )
    server = {"command": sys.executable, "args": [TEST_SERVER]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"t": server}}))
    return bundle


def test_a_killed_nests_task_runs_on_another_nest_and_its_late_completion_is_refused(
    tmp_path: Path,
) -> None:
    gate, started = tmp_path / "gate", tmp_path / "started"
    hub = Up(tmp_path / "hub", command=("hub", "serve")).start()
    nests: list[Nest] = []
    try:
        hub.agen("deploy", str(gate_bundle(tmp_path / "bundle", gate, started)))
        a = Nest(
            hub, tmp_path / "a", "a", "--join-token", hub.json("join-token", "create")["token"]
        )
        nests.append(a)
        submitted = hub.json("run", "gate", "go", "--no-wait")
        task = submitted.get("id") or submitted["task"]["id"]
        wait_until(
            lambda: started.exists() and started.read_text().strip(), 120, "the step started"
        )
        db = sqlite3.connect(hub.home / "agen.db")
        lease_a = db.execute("SELECT lease_id FROM tasks WHERE id = ?", (task,)).fetchone()[0]
        a.proc.send_signal(signal.SIGKILL)  # mid-step: no drain, no report
        a.proc.wait(10)

        b = Nest(
            hub, tmp_path / "b", "b", "--join-token", hub.json("join-token", "create")["token"]
        )
        nests.append(b)
        wait_until(lambda: len(started.read_text().split()) >= 2, 180, "the step restarted on b")
        gate.touch()
        done = hub.json("wait", task, "--timeout", "2m")
        assert (done.get("state") or done["task"]["state"]) == "succeeded", done

        ids = dict(db.execute("SELECT name, id FROM nests").fetchall())
        events = db.execute(
            "SELECT type, data FROM events WHERE task_id = ? ORDER BY seq", (task,)
        ).fetchall()
        starts = [json.loads(d)["nest_id"] for t, d in events if t == "task.started"]
        assert starts == [ids["a"], ids["b"]]  # leased by a, then (its lease expired) by b
        kinds = [t for t, _ in events]
        assert "run.resumed" in kinds  # b resumed a's run from its checkpoint
        assert kinds.count("task.succeeded") == 1 and "task.failed" not in kinds

        late = hub.http(
            "CompleteTask",
            {"lease": {"task_id": task, "lease_id": lease_a}, "status": "failed", "error": "late"},
            token=a.credential["token"],
        )
        assert late.status_code in (403, 409), late.text  # not a's lease any more: refused
        after = hub.json("wait", task)
        assert (after.get("state") or after["task"]["state"]) == "succeeded"
    finally:
        gate.touch()
        for nest in nests:
            if nest.proc.poll() is None:
                nest.stop()
        hub.stop()


def test_while_no_hub_answers_a_nest_finishes_its_work_and_reports_it_when_a_hub_returns(
    tmp_path: Path,
) -> None:
    gate, started = tmp_path / "gate", tmp_path / "started"
    hub = Up(tmp_path / "hub", command=("hub", "serve")).start()
    nest: Nest | None = None
    try:
        hub.agen("deploy", str(gate_bundle(tmp_path / "bundle", gate, started)))
        join = hub.json("join-token", "create")["token"]
        nest = Nest(hub, tmp_path / "n", "n", "--join-token", join)
        submitted = hub.json("run", "gate", "go", "--no-wait")
        task = submitted.get("id") or submitted["task"]["id"]
        wait_until(
            lambda: started.exists() and started.read_text().strip(), 120, "the step started"
        )

        hub.stop()  # every Hub is gone; the Nest keeps its work
        gate.touch()
        wait_until(
            lambda: "no Hub answers" in nest.log.read_text(), 120, "the run ended without a Hub"
        )
        assert nest.proc.poll() is None

        hub = Up(tmp_path / "hub", port=hub.port, command=("hub", "serve")).start()
        done = hub.json("wait", task, "--timeout", "2m")
        assert (done.get("state") or done["task"]["state"]) == "succeeded", done
        assert len(started.read_text().split()) == 1  # the step ran once
        db = sqlite3.connect(hub.home / "agen.db")
        kinds = [
            t
            for (t,) in db.execute("SELECT type FROM events WHERE task_id = ?", (task,)).fetchall()
        ]
        assert kinds.count("task.succeeded") == 1
    finally:
        gate.touch()
        if nest is not None and nest.proc.poll() is None:
            nest.stop()
        hub.stop()
