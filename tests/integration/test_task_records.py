"""What one task leaves behind in the store (seed 000 §5/§7/§11), and what it costs to write.

The lean statement set must keep every record: the task row and its states, an event per state change,
the run with its epoch, the run span written unfinished when the run opens and finished at its end,
the messages, spans and usage of its turn."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from agen.api import registry as r
from agen.client import Client
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle


async def _one_task(tmp_path: Path) -> tuple[str, list[str], Path]:
    """Run one echo task to the end on a fresh store: (task id, the writer's statements, store file)."""
    log: list[str] = []
    db = tmp_path / "node.db"
    store = await SQLiteStore.open(db, trace=log.append)
    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1)
    await node.start()
    try:
        client = Client.in_process(node.hub)
        bundle = write_bundle(tmp_path / "b", "echo")
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        log.clear()
        task = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="echo", input="hello"))
        ).task
        done = (await client.call(r.GetTask, GetTaskRequest(id=task.id, wait_seconds=60))).task
        assert done.state == "succeeded"
    finally:
        await node.drain(10)
        await store.close()
    return task.id, list(log), db


def _rows(db: Path, sql: str, *params: Any) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute(sql, params)]
    finally:
        conn.close()


_ISOLATION = ("SAVEPOINT", "RELEASE", "ROLLBACK TO")


def _committed(log: list[str]) -> list[tuple[list[str], bool]]:
    """Each committed transaction's statements, and whether it re-ran a batch that was rolled back.

    A batch runs its functions back to back without savepoints; when one of them fails (under load,
    a leader tick that lost its lease and is fenced), the Store rolls the batch back and runs it
    again with a savepoint around each function. The rolled-back attempt never took effect, so it
    is left out; the re-run carries its savepoints."""
    out: list[tuple[list[str], bool]] = []
    current: list[str] = []
    rerun = False
    for stmt in log:
        if stmt.startswith("BEGIN"):
            current = []
        elif stmt == "COMMIT":
            out.append((current, rerun))
            rerun = False
        elif stmt == "ROLLBACK":
            current, rerun = [], True
        else:
            current.append(stmt)
    return out


def _transactions(log: list[str]) -> list[list[str]]:
    """The committed transactions' statements, savepoints aside."""
    return [[s for s in stmts if not s.startswith(_ISOLATION)] for stmts, _ in _committed(log)]


async def test_one_task_leaves_its_task_row_state_events_run_span_messages_and_usage(
    tmp_path: Path,
) -> None:
    task_id, log, db = await _one_task(tmp_path)
    (task,) = _rows(db, "SELECT * FROM tasks WHERE id = ?", task_id)
    assert task["state"] == "succeeded" and task["finished_ms"] and task["started_ms"]
    assert json.loads(task["outcome"])["status"] == "done"
    events = [
        e["type"]
        for e in _rows(db, "SELECT type FROM events WHERE task_id = ? ORDER BY seq", task_id)
    ]
    assert events == [
        "task.queued",
        "task.started",
        "run.started",
        "run.finished",
        "task.succeeded",
    ]
    (run,) = _rows(db, "SELECT * FROM runs WHERE task_id = ?", task_id)
    assert run["epoch"] == 1 and run["status"] == "succeeded" and run["finished_ms"]
    assert run["turns"] == 1 and run["input_tokens"] > 0 and run["output_tokens"] > 0
    spans = _rows(db, "SELECT * FROM spans WHERE run_id = ? ORDER BY started_ms, id", run["id"])
    run_span = next(s for s in spans if s["id"] == run["span_id"])
    assert run_span["name"] == "agen.run" and run_span["status"] == "ok" and run_span["ended_ms"]
    assert len(spans) >= 2  # the run span and its model call
    messages = _rows(
        db, "SELECT seq, role, content FROM messages WHERE run_id = ? ORDER BY seq", run["id"]
    )
    assert [(m["seq"], m["role"]) for m in messages] == [(1, "user"), (2, "assistant")]
    assert messages[0]["content"] == "hello"
    (usage,) = _rows(db, "SELECT * FROM usage WHERE run_id = ?", run["id"])
    assert usage["task_id"] == task_id and usage["input_tokens"] == run["input_tokens"]
    # The run span is committed unfinished in the transaction that opens the run, before the model call.
    opening = next(
        t for t in _transactions(log) if any(s.startswith("INSERT INTO runs") for s in t)
    )
    assert any(s.startswith("INSERT INTO spans") and "'unfinished'" in s for s in opening)


async def test_one_task_writes_the_lean_statement_set(tmp_path: Path) -> None:
    """No read-before-write of the run, no separate held check, no next_seq for a keyless conversation,
    no savepoints, no clean-up of locks, approvals or children it never had: the statements that name
    the task or its run stay within the budget (16; 22 before the lean set, savepoints aside)."""
    task_id, raw, db = await _one_task(tmp_path)
    (run,) = _rows(db, "SELECT id FROM runs WHERE task_id = ?", task_id)
    first_tries = [s for stmts, rerun in _committed(raw) if not rerun for s in stmts]
    assert not [s for s in first_tries if s.startswith(_ISOLATION)]
    log = [s for t in _transactions(raw) for s in t]
    mine = [s for s in log if task_id in s or run["id"] in s]
    assert not [s for s in mine if s.startswith("SELECT * FROM runs WHERE task_id")]
    assert not [s for s in mine if s.startswith("SELECT held")]
    assert not [s for s in log if s.startswith("UPDATE conversations")]
    # It held no lock, waited on no approval and has no child: nothing to release, close or cancel.
    assert not [s for s in log if s.startswith("DELETE FROM locks")]
    assert not [s for s in log if s.startswith("SELECT * FROM approvals")]
    assert not [s for s in log if s.startswith("SELECT * FROM tasks WHERE parent_task_id")]
    assert not [s for s in log if s.startswith("SELECT kind FROM deployments")]
    assert len(mine) <= 16, "\n".join(mine)
