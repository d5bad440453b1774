"""MCP servers bound to ${WORKSPACE} start per run, on that run's task workspace (embedded `agen run`)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.e2e.harness import AGEN


def test_coder_template_runs_with_its_workspace_server_on_the_task_workspace(
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "AGEN_HOME": str(tmp_path / "home"),
        "AGEN_WORKSPACE_ROOT": str(tmp_path / "ws"),
    }
    for var in ("AGEN_HUB", "AGEN_TOKEN"):
        env.pop(var, None)
    subprocess.run(
        [AGEN, "init", "x", "--template", "coder"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
    )
    script = [
        {
            "toolCalls": [
                {
                    "name": "workspace_write",
                    "arguments": {"path": "notes/hello.txt", "content": "hi\n"},
                }
            ]
        },
        {"toolCalls": [{"name": "finish", "arguments": {"status": "done", "summary": "wrote it"}}]},
    ]
    (tmp_path / "x/x-agen/harness.json").write_text(
        json.dumps({"provider": "fake", "fake": {"script": script}})
    )
    r = subprocess.run(
        [AGEN, "run", "x", "write the note", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    task = json.loads(r.stdout)
    assert task["state"] == "succeeded" and task["outcome"]["summary"] == "wrote it"
    written = tmp_path / "ws" / "default" / "x" / "tasks" / task["id"] / "notes" / "hello.txt"
    assert written.read_text() == "hi\n"
    assert not (tmp_path / "ws" / "default" / "x" / "notes").exists()
