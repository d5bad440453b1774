"""A one-shot `agen run` (no `agen up` serving) touches only its own task's deployment, and never
starts a Hub beside a running `agen up` (even a stopped one) or beside another Hub on the same store."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shlex
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from agen.api import registry as r
from agen.client import Client
from agen.hub.service import Hub
from agen.ownership import hold_store_for_oneshot, release
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import SubmitTaskRequest
from tests.e2e.harness import AGEN, Up, wait_until
from tests.fleet_helpers import files_b64, write_bundle
from tests.ports import free_port

OTHERS = [f"other{i}" for i in range(5)]


def marked_bundle(root: Path, name: str, marker: Path, **kw: Any) -> Path:
    """A pool bundle whose MCP server writes ``marker`` when it starts: seen from outside the Hub."""
    work = root / f"{name}-work"
    work.mkdir(parents=True, exist_ok=True)
    marker.parent.mkdir(parents=True, exist_ok=True)
    # the server runs in the sandbox: it may write its marker's folder and its --root
    sandbox = {"filesystem": {"write": [str(marker.parent), str(work)]}}
    bundle = write_bundle(
        root / name,
        name,
        config={"kind": "pool", "scale": {"min": 0, "max": 1}},
        sandbox=sandbox,
        **kw,
    )
    start = (
        f"touch {shlex.quote(str(marker))}; exec {shlex.quote(sys.executable)} -m agen mcp workspace --root "
        f"{shlex.quote(str(work))}"
    )
    (bundle / "mcp.json").write_text(
        json.dumps({"mcpServers": {"ws": {"command": "sh", "args": ["-c", start]}}})
    )
    return bundle


def rows(db: Path, sql: str, *args: object) -> list[dict[str, object]]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(x) for x in conn.execute(sql, args).fetchall()]


async def seed(home: Path, tmp: Path) -> dict[str, Path]:
    """`mine` and five other deployments, each other one with two queued tasks (no `agen up` runs)."""
    markers = {name: tmp / "markers" / f"{name}.started" for name in ["mine", *OTHERS]}
    store = await SQLiteStore.open(home / "agen.db")
    try:
        client = Client.in_process(Hub(store))
        for name, marker in markers.items():
            bundle = marked_bundle(tmp / "bundles", name, marker)
            await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        for name in OTHERS:
            for i in range(2):
                await client.call(
                    r.SubmitTask, SubmitTaskRequest(deployment=name, input=f"{name} task {i}")
                )
    finally:
        await store.close()
    return markers


def test_one_shot_starts_no_other_deployment_and_runs_none_of_their_tasks(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    markers = asyncio.run(seed(home, tmp_path))
    oneshot = Up(home)  # never started: the CLI runs an embedded Hub on this home

    result = oneshot.agen("run", "mine", "hello")

    assert result.stdout.strip() == "You said: hello"
    assert markers["mine"].exists()  # its own instance (and MCP server) did start
    assert [n for n in OTHERS if markers[n].exists()] == []
    db = home / "agen.db"
    others = rows(db, "SELECT deployment, state, attempts FROM tasks WHERE deployment != 'mine'")
    assert len(others) == 10 and all(t["state"] == "queued" and t["attempts"] == 0 for t in others)
    assert (
        rows(
            db,
            "SELECT d.name FROM instances i JOIN deployments d ON d.id = i.deployment_id"
            " WHERE d.name != 'mine'",
        )
        == []
    )
    assert (
        rows(db, "SELECT name, desired FROM deployments WHERE name != 'mine' AND desired != 0")
        == []
    )
    assert (
        rows(db, "SELECT name FROM nests WHERE state = 'active'") == []
    )  # the one-shot's Nest went with it
    assert rows(db, "SELECT name FROM leases") == []


def stepping_bundle(root: Path, work: Path, hold: Path) -> Path:
    """One long side effect: it appends to effects.log, then blocks while ``hold`` exists."""
    work.mkdir(parents=True, exist_ok=True)
    command = f"echo 1 >> effects.log; while [ -e {shlex.quote(str(hold))} ]; do sleep 0.1; done"
    bundle = write_bundle(
        root,
        "stepper",
        script=[
            {"toolCalls": [{"name": "ws_run", "arguments": {"command": command}}]},
            {"text": "done"},
        ],
        config={"scale": {"min": 1, "max": 1}, "permissions": {"default": "allow"}},
    )
    server = {"command": "agen", "args": ["mcp", "workspace", "--root", str(work)]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"ws": server}}))
    return bundle


def stderr_lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def wait_for_line(lines: queue.Queue[str], needle: str, timeout_s: float = 60) -> str:
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"no stderr line with {needle!r}; saw {seen}") from None
        seen.append(line)
        if needle in line:
            return line


def test_one_shot_waits_for_a_stopped_agen_up_and_never_takes_its_leases(tmp_path: Path) -> None:
    home, work, hold = tmp_path / "home", tmp_path / "work", tmp_path / "hold"
    hold.touch()
    up = Up(home).start()
    assert up.proc is not None
    pid = up.proc.pid
    db = home / "agen.db"
    try:
        up.agen("deploy", str(stepping_bundle(tmp_path / "stepper", work, hold)))
        up.agen(
            "deploy",
            str(write_bundle(tmp_path / "quick", "quick", config={"scale": {"min": 1, "max": 1}})),
        )
        long_id = up.agen("run", "stepper", "go", "--no-wait").stdout.strip()
        wait_until(lambda: (work / "effects.log").exists(), what="the long task's effect to start")
        before = rows(
            db, "SELECT state, lease_id, lease_nest_id, attempts FROM tasks WHERE id = ?", long_id
        )[0]
        assert before["state"] == "running"

        os.kill(pid, signal.SIGSTOP)
        try:
            gave_up = up.agen("run", "quick", "hi", "--timeout", "2s", check=False)
            assert gave_up.returncode == 3, gave_up.stderr
            assert f"agen up (pid {pid}" in gave_up.stderr and "did not answer" in gave_up.stderr
            assert "Traceback" not in gave_up.stderr
            assert (
                rows(db, "SELECT id FROM tasks WHERE deployment = 'quick'") == []
            )  # nothing submitted

            waiting = subprocess.Popen(
                [AGEN, "run", "quick", "hi again"],
                env=up.env,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            line = wait_for_line(stderr_lines(waiting), "is not answering")
            assert f"agen up (pid {pid}" in line and up.url in line and "Ctrl-C" in line
            after = rows(
                db,
                "SELECT state, lease_id, lease_nest_id, attempts FROM tasks WHERE id = ?",
                long_id,
            )[0]
            assert after == before  # agen up's lease stands: no Hub was started beside it
            assert [n["name"] for n in rows(db, "SELECT name FROM nests")] == ["local"]
            assert [x["name"] for x in rows(db, "SELECT name FROM leases")] == ["hub-leader"]
        finally:
            os.kill(pid, signal.SIGCONT)
        out, _ = waiting.communicate(timeout=60)
        assert waiting.returncode == 0 and out.strip() == "You said: hi again"
        ran = rows(
            db,
            "SELECT t.state, r.owner FROM tasks t JOIN runs r ON r.task_id = t.id"
            " WHERE t.deployment = 'quick'",
        )
        assert [x["state"] for x in ran] == ["succeeded"]
        assert (
            rows(db, "SELECT lease_id FROM tasks WHERE id = ?", long_id)[0]["lease_id"]
            == before["lease_id"]
        )
    finally:
        hold.unlink(missing_ok=True)
        up.stop()


def test_run_no_wait_against_a_frozen_agen_up_gives_up_after_the_hub_timeout(
    tmp_path: Path,
) -> None:
    """--no-wait waits for the Hub at most AGEN_HUB_TIMEOUT (30 s unless set), as every Hub call does,
    then exits 3 with nothing submitted; --timeout is how long to wait for a result, not for this."""
    up = Up(tmp_path / "home").start()
    assert up.proc is not None
    pid = up.proc.pid
    try:
        up.agen("deploy", str(write_bundle(tmp_path / "quick", "quick")))
        os.kill(pid, signal.SIGSTOP)
        try:
            for env in ({"AGEN_HUB_TIMEOUT": "2"}, {"AGEN_HUB_TIMEOUT": "2s"}):
                gave_up = up.agen(
                    "run", "quick", "hi", "--no-wait", check=False, timeout=30, env_extra=env
                )
                assert gave_up.returncode == 3, gave_up.stderr
                assert (
                    f"agen up (pid {pid}" in gave_up.stderr and "did not answer" in gave_up.stderr
                )
                assert "not submitted" in gave_up.stderr and "Traceback" not in gave_up.stderr
            bad = up.agen(
                "run", "quick", "hi", "--no-wait", check=False, env_extra={"AGEN_HUB_TIMEOUT": "x"}
            )
            assert bad.returncode == 2 and "AGEN_HUB_TIMEOUT" in bad.stderr, bad.stderr
        finally:
            os.kill(pid, signal.SIGCONT)
        assert rows(tmp_path / "home" / "agen.db", "SELECT id FROM tasks") == []
    finally:
        up.stop()


def test_second_agen_up_on_the_same_store_file_is_refused_naming_the_first(tmp_path: Path) -> None:
    first = Up(tmp_path / "a").start()
    assert first.proc is not None
    try:
        second = Up(tmp_path / "b")
        second.home.mkdir()
        r2 = subprocess.run(
            [
                AGEN,
                "up",
                "--headless",
                "--listen",
                f"127.0.0.1:{free_port()}",
                "--store",
                str(first.home / "agen.db"),
            ],
            env=second.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r2.returncode == 5, r2.stderr
        assert f"agen up (pid {first.proc.pid}" in r2.stderr and str(first.home) in r2.stderr
        assert "Traceback" not in r2.stderr
        assert [n["name"] for n in rows(first.home / "agen.db", "SELECT name FROM nests")] == [
            "local"
        ]
    finally:
        first.stop()


def test_agen_up_waits_for_a_one_shot_using_its_store_then_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    lock = hold_store_for_oneshot(
        home / "agen.db"
    )  # what an embedded `agen run` holds while it runs
    assert lock is not None
    up = Up(home)
    try:
        out = open(up.log, "ab")  # noqa: SIM115 - owned by the child
        up.proc = subprocess.Popen(
            [AGEN, "up", "--headless", "--listen", f"127.0.0.1:{up.port}"],
            env=up.env,
            stdout=out,
            stderr=out,
        )
        wait_until(
            lambda: "one-shot `agen run` is using the store" in up.log.read_text(),
            what="agen up to wait",
        )
        assert not (home / "local.json").exists()
        release(lock)
        wait_until(
            lambda: (home / "local.json").exists() and up.local().get("pid") == up.proc.pid,
            what="agen up to start once the one-shot ended",
        )
    finally:
        release(lock)
        up.stop()
