"""SIGKILL a real process between a side effect's start and its completion, then restart it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agen.errors import FencedError
from agen.runner.records import Checkpoint, write_checkpoint
from agen.store import SQLiteStore

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
        "x-agen/harness.json": {"provider": "fake", "fake": {"script": [
            {"toolCalls": [{"name": "append_line", "arguments": {"text": "paid 5 EUR"}}]},
            {"text": "the payment may already be recorded; not repeating it"},
        ]}},
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
    return subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


@pytest.mark.slow
async def test_sigkill_between_effect_start_and_completion_resumes_without_repeating_it(tmp_path: Path) -> None:
    bundle, db, out, marker = tmp_path / "bundle", tmp_path / "agen.db", tmp_path / "ledger.txt", tmp_path / "started"
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
        tool = await store.one("SELECT content, is_error FROM messages WHERE run_id = ? AND role = 'tool'",
                               (run["id"],))
        assert tool is not None and tool["content"].startswith("effect_unknown") and tool["is_error"] == 1
        effect = await store.one("SELECT state, epoch FROM effects WHERE run_id = ?", (run["id"],))
        assert effect == {"state": "started", "epoch": 1}
        spans = await store.all("SELECT status FROM spans WHERE run_id = ? AND name = 'agen.run' ORDER BY started_ms",
                                (run["id"],))
        assert [s["status"] for s in spans] == ["interrupted", "ok"]
        late = Checkpoint(run_id=run["id"], epoch=1, conversation_id=run["conversation_id"], turns=5, next_seq=50)
        with pytest.raises(FencedError):  # the killed owner's late write would be rejected
            await store.write(lambda tx: write_checkpoint(tx, late))
    finally:
        await store.close()
