"""`run` in the workspace server: returns when the shell exits, and leaves no process behind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agen.runner.tools.base import Tool
from agen.runner.tools.mcp import McpToolset
from tests.integration.mcp_helpers import ctx, eventually, pid_alive, stdio_toolset


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[Path, Tool, McpToolset]]:
    root = tmp_path / "root"
    root.mkdir()
    ts = stdio_toolset(
        ["mcp", "workspace", "--root", str(root), "--run-timeout", "60s"], command="agen", name="ws"
    )
    tools = {t.name: t for t in await ts.start()}
    yield root, tools["ws.run"], ts
    await ts.close()


def pids(root: Path, *names: str) -> list[int]:
    return [int((root / n).read_text()) for n in names]


async def wait_for_files(root: Path, *names: str) -> None:
    assert await eventually(
        lambda: all((root / n).exists() and (root / n).read_text().strip() for n in names), 20
    )


async def test_run_returns_at_the_shells_exit_while_a_background_child_still_runs_then_server_exit_stops_it(
    server: tuple[Path, Tool, McpToolset],
) -> None:
    root, run, ts = server
    command = (
        "sh -c 'echo $$ > bg.pid; exec sleep 1000' & "
        "setsid sh -c 'echo $$ > daemon.pid; exec sleep 1000' & "
        "echo started"
    )
    result = await run.call({"command": command}, ctx())
    assert not result.is_error and "started" in result.content and "[exit code 0]" in result.content
    await wait_for_files(root, "bg.pid", "daemon.pid")
    bg, daemon = pids(root, "bg.pid", "daemon.pid")
    assert pid_alive(bg) and pid_alive(
        daemon
    )  # the call did not wait for them (they would run 1000 s)

    await ts.close()  # the server exits: nothing its commands started outlives it
    assert await eventually(lambda: not pid_alive(bg) and not pid_alive(daemon), 20)


async def test_a_timed_out_command_loses_children_that_left_its_process_group(
    server: tuple[Path, Tool, McpToolset],
) -> None:
    root, run, _ = server
    command = (
        "setsid sh -c 'echo $$ > escaped.pid; exec sleep 1000' & "
        "(sh -c 'echo $$ > orphan.pid; trap \"\" TERM; while true; do sleep 0.1; done' &) ; "
        "while [ ! -s escaped.pid ] || [ ! -s orphan.pid ]; do sleep 0.05; done; sleep 300"
    )
    result = await run.call({"command": command, "timeout_seconds": 3}, ctx())
    assert "timed out after 3s" in result.content
    escaped, orphan = pids(root, "escaped.pid", "orphan.pid")
    assert await eventually(lambda: not pid_alive(escaped) and not pid_alive(orphan), 20)


async def test_many_background_children_do_not_turn_a_finished_shell_into_a_timeout(
    server: tuple[Path, Tool, McpToolset],
) -> None:
    _, run, _ = server
    command = "for i in $(seq 20); do sleep 1000 & done; echo launched"
    result = await run.call({"command": command, "timeout_seconds": 20}, ctx())
    assert (
        not result.is_error and "launched" in result.content and "[exit code 0]" in result.content
    )
    assert "timed out" not in result.content


def test_a_commands_mark_selects_only_its_own_processes_not_one_whose_mark_it_prefixes() -> None:
    import os
    import subprocess
    import sys

    from agen.mcpservers._shell import MARK_VAR, marked_pids

    if not sys.platform.startswith("linux"):
        pytest.skip("marks are read from /proc")
    procs = {
        mark: subprocess.Popen(["sleep", "1000"], env={**os.environ, MARK_VAR: mark})
        for mark in ("tok:1", "tok:10", "other:1")
    }
    try:
        assert marked_pids("tok:1") == [procs["tok:1"].pid]  # command 1 is not command 10
        assert sorted(marked_pids("tok:")) == sorted(
            [procs["tok:1"].pid, procs["tok:10"].pid]
        )  # the whole server
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
