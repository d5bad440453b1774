"""What the CLI prints for people and for scripts: whole values when piped, JSON errors, JSON Lines."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from agen.cli import app
from agen.errors import AgenError
from tests.observe_helpers import TEST_SERVER, Embedded, embedded_hub, http_hub


async def agen(url: str, token: str, *args: str) -> tuple[int, str, str]:
    runner = CliRunner()
    res = await asyncio.to_thread(
        runner.invoke, app, [*args, "--hub", url, "--token", token], env={"COLUMNS": "80"}
    )
    if isinstance(res.exception, AgenError):
        return res.exception.exit_code, res.stdout, f"error: {res.exception}"
    return res.exit_code, res.stdout, res.stderr


LONG = "make build && make test && make package && rm -rf /home/user/projects/important-data"


async def _gate(e: Embedded) -> str:
    """A task waiting for approval of a tool call whose dangerous part is at the end of its arguments."""
    await e.deploy(
        "gate-long",
        script=[{"toolCalls": [{"name": "t_echo", "arguments": {"text": LONG}}]}, {"text": "ok"}],
        config={
            "kind": "pool",
            "scale": {"min": 1, "max": 1},
            "permissions": {"ask": ["t.echo"], "default": "allow"},
        },
        mcp={"t": {"command": sys.executable, "args": [TEST_SERVER]}},
    )
    task = await e.submit("gate-long", "build it")
    for _ in range(600):
        t = await e.wait(task.id, seconds=1)
        if t.pending_approvals:
            return t.pending_approvals[0]
    raise AssertionError("the task never asked for an approval")


async def test_piped_approvals_show_the_whole_arguments_and_every_column(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        approval = await _gate(e)
        code, out, _ = await agen(url, token, "approvals")
        assert code == 0
        header, row = out.splitlines()
        assert header.split() == ["ID", "DEPLOYMENT", "TASK", "TOOL", "ARGUMENTS", "STATE", "ASKED"]
        assert approval in row and json.dumps({"text": LONG}) in row and "pending" in row
