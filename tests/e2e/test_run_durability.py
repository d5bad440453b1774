"""SIGKILL a real process between a side effect's start and its completion, then restart it: an SDK
process once, and a real `agen up` after every turn of a long task."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agen.errors import FencedError
from agen.runner.records import Checkpoint, write_checkpoint
from agen.store import SQLiteStore
from tests.e2e.harness import Up, wait_until
from tests.fleet_helpers import write_bundle as write_fleet_bundle

CHILD = '''
import asyncio, json, sys, time
from pathlib import Path
from agen.sdk import Agent, host_tool

bundle, db, out, marker = sys.argv[1:5]

@host_tool(side_effect=True)
def append_line(text: str) -> str:
    """Append a line to the ledger file."""
    with open(out, "a") as f:
        f.write(text + "\\n")
    Path(marker).write_text("started")
    time.sleep(60)  # the test kills us here: the effect happened, its completion is not recorded
    return "appended"

async def main() -> None:
    async with Agent.from_bundle(bundle, store=db, tools=[append_line]) as agent:
        result = await agent.run("record the payment", task_id="dur-1")
    print(json.dumps({"epoch": result.epoch, "resumed": result.resumed, "status": result.status,
                      "summary": result.outcome.summary}))

asyncio.run(main())
'''


def write_bundle(root: Path) -> None:
    files = {
        "plugin.json": {"name": "ledger"},
        "x-agen/agent.md": "You record payments in the ledger.",
        "x-agen/harness.json": {
            "provider": "fake",
            "fake": {
                "script": [
                    {"toolCalls": [{"name": "append_line", "arguments": {"text": "paid 5 EUR"}}]},
                    {"text": "the payment may already be recorded; not repeating it"},
                ]
            },
        },
        "x-agen/config.json": {"permissions": {"default": "allow"}},
    }
    for path, data in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data if isinstance(data, str) else json.dumps(data))


def start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.slow
async def test_sigkill_between_effect_start_and_completion_resumes_without_repeating_it(
    tmp_path: Path,
) -> None:
    bundle, db, out, marker = (
        tmp_path / "bundle",
        tmp_path / "agen.db",
        tmp_path / "ledger.txt",
        tmp_path / "started",
    )
    write_bundle(bundle)
    args = (str(bundle), str(db), str(out), str(marker))

    first = start(tmp_path, *args)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        assert time.monotonic() < deadline, "the child never started its side effect"
        await asyncio.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    await asyncio.to_thread(first.wait, 10)

    second = start(tmp_path, *args)
    stdout, stderr = await asyncio.to_thread(second.communicate, timeout=60)
    assert second.returncode == 0, stderr
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["resumed"] is True and result["epoch"] == 2 and result["status"] == "succeeded"
    assert out.read_text() == "paid 5 EUR\n"  # the side effect was not repeated

    store = await SQLiteStore.open(db)
    try:
        run = await store.one("SELECT id, conversation_id, epoch FROM runs WHERE task_id = 'dur-1'")
        assert run is not None and run["epoch"] == 2
        tool = await store.one(
            "SELECT content, is_error FROM messages WHERE run_id = ? AND role = 'tool'",
            (run["id"],),
        )
        assert (
            tool is not None
            and tool["content"].startswith("effect_unknown")
            and tool["is_error"] == 1
        )
        effect = await store.one("SELECT state, epoch FROM effects WHERE run_id = ?", (run["id"],))
        assert effect == {"state": "started", "epoch": 1}
        spans = await store.all(
            "SELECT status FROM spans WHERE run_id = ? AND name = 'agen.run' ORDER BY started_ms",
            (run["id"],),
        )
        assert [s["status"] for s in spans] == ["interrupted", "ok"]
        late = Checkpoint(
            run_id=run["id"], epoch=1, conversation_id=run["conversation_id"], turns=5, next_seq=50
        )
        with pytest.raises(FencedError):  # the killed owner's late write would be rejected
            await store.write(lambda tx: write_checkpoint(tx, late))
    finally:
        await store.close()


KILLS = 5


def long_task_bundle(root: Path, work: Path, hold: Path) -> Path:
    """KILLS + 1 turns, each a side effect that appends its number to effects.log and then blocks while
    ``hold`` exists: the test kills the host while each turn's effect is in flight."""
    work.mkdir(parents=True, exist_ok=True)
    wait = f"while [ -e {shlex.quote(str(hold))} ]; do sleep 0.1; done"
    turns = [
        {
            "toolCalls": [
                {"name": "ws_run", "arguments": {"command": f"echo {i} >> effects.log; {wait}"}}
            ]
        }
        for i in range(1, KILLS + 2)
    ]
    bundle = write_fleet_bundle(
        root,
        "longtask",
        script=[*turns, {"text": "all turns done"}],
        config={"scale": {"min": 1, "max": 1}, "permissions": {"default": "allow"}},
        sandbox={"filesystem": {"read": [str(hold.parent)]}},  # its commands wait on ``hold``
    )
    server = {"command": "agen", "args": ["mcp", "workspace", "--root", str(work)]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"ws": server}}))
    return bundle


@pytest.mark.slow
def test_long_task_making_progress_survives_five_sigkills_of_agen_up_with_each_effect_done_once(
    tmp_path: Path,
) -> None:
    home, work, hold = tmp_path / "home", tmp_path / "work", tmp_path / "hold"
    hold.touch()
    log = work / "effects.log"
    up = Up(home).start()
    try:
        up.agen("deploy", str(long_task_bundle(tmp_path / "longtask", work, hold)))
        task_id = up.agen("run", "longtask", "go", "--no-wait").stdout.strip()
        for turn in range(1, KILLS + 1):

            def turn_done(n: int = turn) -> bool:
                return log.exists() and len(log.read_text().split()) >= n

            wait_until(
                turn_done,
                timeout_s=60,
                what=f"turn {turn}'s effect",
            )
            up.kill()  # the whole host dies while the turn's effect is in flight
            up = Up(home).start()
        hold.unlink()  # the last turn's effect completes
        result = up.agen("wait", task_id, "--timeout", "120s", check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "all turns done"
    finally:
        hold.unlink(missing_ok=True)
        up.stop()
    assert log.read_text().split() == [
        str(i) for i in range(1, KILLS + 2)
    ]  # each effect exactly once
    with sqlite3.connect(home / "agen.db") as db:
        state, attempts = db.execute(
            "SELECT state, attempts FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()
        released = db.execute(
            "SELECT COUNT(*) FROM events WHERE task_id = ? AND type = 'task.released'", (task_id,)
        ).fetchone()[0]
    assert state == "succeeded" and attempts < KILLS
    assert released == KILLS  # every restart voided the dead process's lease
