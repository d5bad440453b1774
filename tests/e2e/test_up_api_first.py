"""After a crash, `agen up` answers its API at once and starts instances (and MCP servers) behind it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.e2e.harness import Up
from tests.fleet_helpers import write_bundle

# An MCP server that starts only once the test opens its gate: until then, the instance using it is
# "starting" for as long as the test likes (agen gives a server 60 s to answer).
GATED_SERVER = """
import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
os.execv(sys.argv[2], [sys.argv[2], "-m", "agen", "mcp", "workspace", "--root", sys.argv[3]])
"""


def test_after_a_crash_agen_up_answers_while_its_instances_are_still_starting(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    script = tmp_path / "gated_server.py"
    script.write_text(GATED_SERVER)
    (tmp_path / "ws").mkdir()
    bundle = write_bundle(
        tmp_path / "gated", "gated", config={"kind": "pool", "scale": {"min": 1, "max": 1}}
    )
    server = {
        "command": sys.executable,
        "args": [str(script), str(gate), sys.executable, str(tmp_path / "ws")],
    }
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"ws": server}}))

    gate.touch()
    first = Up(tmp_path / "home").start()
    try:
        first.agen("deploy", str(bundle))
        assert (
            "hello" in first.agen("run", "gated", "hello", "--timeout", "2m").stdout
        )  # its instance runs
    finally:
        first.kill()  # a crash: no drain, the deployment still wants its instance
    gate.unlink()

    again = Up(tmp_path / "home", port=first.port)
    try:
        again.start(
            timeout_s=45
        )  # /health answers although the MCP server has not started (it cannot yet)
        assert again.http("ListDeployments", {}).status_code == 200
        gate.touch()
        assert (
            "again" in again.agen("run", "gated", "again", "--timeout", "2m").stdout
        )  # then it starts
    finally:
        again.stop()
