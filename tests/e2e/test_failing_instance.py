"""A bundle whose instances cannot start does not leave `agen run` waiting until its timeout."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.e2e.harness import AGEN
from tests.fleet_helpers import write_bundle


def test_run_on_a_bundle_whose_mcp_server_cannot_launch_says_why_and_exits_early(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "AGEN_HOME": str(home)}
    for var in ("AGEN_HUB", "AGEN_TOKEN"):
        env.pop(var, None)
    bundle = write_bundle(tmp_path / "broken", "broken", config={"scale": {"min": 0, "max": 1}})
    server = {"command": str(tmp_path / "no-such-server"), "args": []}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"tools": server}}))
    started = time.monotonic()
    r = subprocess.run(
        [AGEN, "run", str(bundle), "hello", "--timeout", "5m"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    assert r.returncode == 3, r.stderr  # the documented code for a dependency that cannot start
    assert took < 60, f"agen run waited {took:.0f}s"
    assert "keep failing to start" in r.stderr and "no-such-server" in r.stderr
    assert "agen deploy" in r.stderr and "agen logs broken" in r.stderr
    assert (
        r.stderr.count("failed to start") <= 2
    )  # the Manager's one warning + the summary, not one per attempt
    with sqlite3.connect(home / "agen.db") as db:
        state = db.execute("SELECT state FROM tasks").fetchone()[0]
        failures = db.execute("SELECT COUNT(*) FROM instances WHERE state = 'failed'").fetchone()[0]
        lines = [
            m for (m,) in db.execute("SELECT message FROM deployment_logs WHERE level = 'error'")
        ]
    assert state == "queued"  # kept for a fixed redeploy; not failed
    assert failures >= 3 and len(lines) == 1 and lines[0].startswith("instance failed to start")
