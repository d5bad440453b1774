"""A host killed right after leasing, before the task's run starts, over and over (issue #31): each
loss is the host's, not an attempt of the task, which succeeds once a host lives long enough; and a
task whose host dies that way every time still ends, failed, saying why.

The pause between leasing and the run's start is a real one: with ``--backend process`` the run opens
in the instance's child ``agen host serve``, which the test stops (SIGSTOP) before the task is leased;
the Nest leases, hands the task to the stopped host, and the test SIGKILLs `agen up` (its hosts die
with it). A task hold (PauseTask, as ``agen pause``) keeps the restarted Nest from leasing the task
again before the test has stopped the new host; ResumeTask hands it over."""

from __future__ import annotations

import os
import signal
import sqlite3
from pathlib import Path

import pytest

from agen.hub.queue.lease import MAX_LOST_BEFORE_START
from tests.e2e.harness import Up, wait_until
from tests.e2e.test_graceful_drain import child_pids
from tests.fleet_helpers import write_bundle

KILLS = 10


def _lease(db: Path, task_id: str) -> tuple[str, str | None]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        state, lease_id = c.execute(
            "SELECT state, lease_id FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()
    return str(state), lease_id


def _stopped_ready_host(up: Up, db: Path, seen: set[str]) -> int:
    """Wait for a new instance to be ready, then stop its host process; returns the host's pid."""
    assert up.proc is not None
    proc = up.proc

    def ready() -> str | None:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
            rows = c.execute("SELECT id FROM instances WHERE state IN ('ready', 'busy')").fetchall()
        fresh = [r[0] for r in rows if r[0] not in seen]
        return fresh[0] if fresh else None

    seen.add(wait_until(ready, timeout_s=60, what="a ready instance"))
    [host] = [
        p
        for p in child_pids(proc.pid)
        if b"host\x00serve" in Path(f"/proc/{p}/cmdline").read_bytes()
    ]
    os.kill(host, signal.SIGSTOP)
    return host


def _kill_right_after_leasing(home: Path, kills: int) -> tuple[Up, str]:
    """Deploy, then ``kills`` times: stop the instance's host, let the Nest lease the task, SIGKILL
    `agen up` and start it again. Returns the last `agen up` (running) and the task's id."""
    db = home / "agen.db"
    bundle = write_bundle(
        home.parent / "steady",
        "steady",
        script=[{"text": "done at last"}],
        config={"scale": {"min": 1, "max": 1}},
    )
    seen: set[str] = set()
    up = Up(home, args=("--backend", "process")).start()
    try:
        up.agen("deploy", str(bundle))
        _stopped_ready_host(up, db, seen)
        task_id = up.agen("run", "steady", "go", "--no-wait").stdout.strip()
        leases: list[str] = []
        for kill in range(1, kills + 1):
            if kill > 1:
                _stopped_ready_host(up, db, seen)
                _hold(up, task_id, held=False)

            def leased() -> str | None:
                state, lease_id = _lease(db, task_id)
                fresh = state in ("leased", "running") and lease_id not in (None, *leases)
                return lease_id if fresh else None

            leases.append(wait_until(leased, timeout_s=60, what=f"lease {kill}"))
            _hold(up, task_id, held=True)  # the restarted Nest waits for the test's resume
            up.kill()  # right after leasing: the stopped host never opened the run
            up = Up(home, args=("--backend", "process")).start()
    except BaseException:
        up.stop()
        raise
    return up, task_id


def _hold(up: Up, task_id: str, *, held: bool) -> None:
    """``agen pause`` / ``agen resume`` through the API (the same RPCs, without a CLI start per call)."""
    r = up.http("PauseTask" if held else "ResumeTask", {"id": task_id})
    assert r.status_code == 200, r.text


def _released_lines(db: Path, task_id: str) -> list[str]:
    with sqlite3.connect(db) as c:
        return [
            r[0]
            for r in c.execute(
                "SELECT message FROM deployment_logs WHERE message LIKE ? ORDER BY seq",
                (f"task {task_id} released%",),
            )
        ]


@pytest.mark.slow
@pytest.mark.timeout(600)  # 10 kills and restarts of `agen up`
def test_a_task_whose_host_is_killed_right_after_leasing_ten_times_still_succeeds(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    db = home / "agen.db"
    up, task_id = _kill_right_after_leasing(home, KILLS)
    try:
        up.agen("resume", task_id)
        result = up.agen("wait", task_id, "--timeout", "120s", check=False)
        assert result.returncode == 0, result.stderr + (home / "up.log").read_text()[-3000:]
        assert result.stdout.strip() == "done at last"
    finally:
        up.stop()
    with sqlite3.connect(db) as c:
        state, attempts, lost, error = c.execute(
            "SELECT state, attempts, lost_before_start, error FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()
        runs = c.execute("SELECT COUNT(*) FROM runs WHERE task_id = ?", (task_id,)).fetchone()[0]
    assert (state, attempts, lost, error, runs) == ("succeeded", 1, KILLS, None, 1)
    logs = _released_lines(db, task_id)
    assert len(logs) == KILLS and all(
        "nest local restarted; its run had not started (charged to the host, not an attempt)"
        in line
        for line in logs
    ), logs


@pytest.mark.slow
@pytest.mark.timeout(600)  # 15 kills and restarts of `agen up`
def test_a_task_whose_host_dies_every_time_right_after_leasing_ends_failed_saying_why(
    tmp_path: Path,
) -> None:
    """The poison case: every lease of the task ends with its host dead before its run opens. It
    must not loop for ever: the MAX_LOST_BEFORE_START-th loss fails it, with an error that says so."""
    home = tmp_path / "home"
    up, task_id = _kill_right_after_leasing(home, MAX_LOST_BEFORE_START)
    try:
        result = up.agen("wait", task_id, "--timeout", "60s", check=False)
    finally:
        up.stop()
    assert result.returncode != 0
    assert (
        f"task failed: its host was lost {MAX_LOST_BEFORE_START} times after leasing it and before"
        f" its run started (max {MAX_LOST_BEFORE_START}); the task may be what stops its host;"
        " last: nest local restarted"
    ) in result.stdout + result.stderr
    assert len(_released_lines(home / "agen.db", task_id)) == MAX_LOST_BEFORE_START
