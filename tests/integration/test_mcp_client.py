"""The MCP client on real servers run as subprocesses (the test server, mcp-server-time, HTTP)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agen.bundle.config import ToolHints
from agen.errors import UnavailableError
from agen.runner.tools.base import ToolError
from tests.integration.mcp_helpers import (
    TEST_SERVER,
    ctx,
    eventually,
    http_toolset,
    pid_alive,
    stdio_toolset,
    wait_port,
)
from tests.ports import free_port


async def test_stdio_server_sees_only_allowlisted_and_declared_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGEN_TEST_HOST_CANARY", "host-only-canary-value")
    monkeypatch.setenv("API_TOKEN_VALUE", "declared-secret-value")
    ts = stdio_toolset(
        env={"TOKEN": "${API_TOKEN}", "PLAIN": "x"},
        secrets={"API_TOKEN": {"source": "env", "env": "API_TOKEN_VALUE"}},
    )
    tools = {t.name: t for t in await ts.start()}
    try:
        leaked = await tools["t.env"].call({"name": "AGEN_TEST_HOST_CANARY"}, ctx())
        assert leaked.content == "<unset>"
        names = (await tools["t.env_names"].call({}, ctx())).content.split(",")
        allowed = {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ"}
        assert set(names) - allowed == {"TOKEN", "PLAIN"}
        token = await tools["t.env"].call({"name": "TOKEN"}, ctx())
        assert token.content == "[REDACTED]"  # the server got it; the result shown is scrubbed
    finally:
        await ts.close()


async def test_every_call_carries_the_run_meta_keys() -> None:
    ts = stdio_toolset()
    tools = {t.name: t for t in await ts.start()}
    try:
        run = ctx(
            task_id="task-9",
            labels={"team": "a"},
            trust="untrusted",
            workspace="/w",
            locks={"db": 3},
            traceparent="00-abc-def-01",
            conversation_key="api:k",
        )
        meta = json.loads((await tools["t.meta"].call({}, run)).content)
        assert meta["agen/taskId"] == "task-9"
        assert meta["agen/labels"] == {"team": "a"}
        assert meta["agen/trust"] == "untrusted"
        assert meta["agen/workspace"] == "/w"
        assert meta["agen/locks"] == {"db": 3}
        assert meta["agen/conversationKey"] == "api:k"
        assert meta["traceparent"] == "00-abc-def-01"
        for key in (
            "agen/namespace",
            "agen/deployment",
            "agen/runId",
            "agen/rootRunId",
            "agen/conversationId",
        ):
            assert key in meta
    finally:
        await ts.close()


async def test_tool_names_and_hints_follow_annotations_and_config_overrides() -> None:
    ts = stdio_toolset(
        hints={"append": ToolHints(idempotent=True), "echo": ToolHints(untrusted_output=True)}
    )
    tools = {t.name: t for t in await ts.start()}
    try:
        read = tools["t.env"]
        assert (read.read_only, read.side_effect, read.wire_name) == (True, False, "t_env")
        assert tools["t.append"].side_effect and tools["t.append"].idempotent
        assert tools["t.echo"].idempotent and tools["t.echo"].untrusted_output
        assert tools["t.browse"].untrusted_output and not tools["t.browse"].side_effect
        assert (
            tools["t.crash_once_effect"].side_effect and not tools["t.crash_once_effect"].idempotent
        )
        failed = await tools["t.fail"].call({"reason": "nope"}, ctx())
        assert failed.is_error and "failed on purpose: nope" in failed.content
    finally:
        await ts.close()


async def test_server_dying_mid_call_retries_an_idempotent_call_once_on_a_fresh_connection(
    tmp_path: Path,
) -> None:
    ts = stdio_toolset()
    tools = {t.name: t for t in await ts.start()}
    marker = tmp_path / "calls"
    try:
        first_pid = int((await tools["t.pid"].call({}, ctx())).content)
        result = await tools["t.crash_once_idempotent"].call({"marker": str(marker)}, ctx())
        assert result.content == "survived"
        assert marker.read_text() == "2"  # the first attempt died, the one retry answered
        assert ts.conn.connects == 2
        assert int((await tools["t.pid"].call({}, ctx())).content) != first_pid
        assert ts.healthy()
    finally:
        await ts.close()


async def test_server_dying_mid_call_does_not_retry_a_side_effecting_call(tmp_path: Path) -> None:
    ts = stdio_toolset()
    tools = {t.name: t for t in await ts.start()}
    marker = tmp_path / "calls"
    try:
        with pytest.raises(
            ToolError, match="not retried because the tool is neither read-only nor idempotent"
        ):
            await tools["t.crash_once_effect"].call({"marker": str(marker)}, ctx())
        assert marker.read_text() == "1"
        assert not ts.healthy()  # a dead server reports unhealthy until something reconnects
        assert ts.conn.connects == 1
    finally:
        await ts.close()


async def test_externally_killed_server_is_unhealthy_and_a_read_only_call_reconnects(
    tmp_path: Path,
) -> None:
    ts = stdio_toolset()
    tools = {t.name: t for t in await ts.start()}
    try:
        pid = int((await tools["t.pid"].call({}, ctx())).content)
        os.kill(pid, signal.SIGKILL)
        assert await eventually(lambda: not ts.healthy())
        new_pid = int((await tools["t.pid"].call({}, ctx())).content)
        assert new_pid != pid and ts.healthy()
        # killed again: a side-effecting call on the dead connection is never sent twice
        os.kill(new_pid, signal.SIGKILL)
        assert await eventually(lambda: not ts.healthy())
        out = tmp_path / "out.txt"
        result = await tools["t.append"].call({"path": str(out), "line": "x"}, ctx())
        assert (
            result.content == "appended" and out.read_text() == "x\n"
        )  # sent once, on a fresh connection
    finally:
        await ts.close()


async def test_closing_the_toolset_stops_the_server_process() -> None:
    ts = stdio_toolset()
    tools = {t.name: t for t in await ts.start()}
    pid = int((await tools["t.pid"].call({}, ctx())).content)
    await ts.close()
    assert await eventually(lambda: not pid_alive(pid))


def test_stdio_server_dies_with_agen_through_the_parent_death_signal(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(
        textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.integration.mcp_helpers import stdio_toolset, ctx
        async def main():
            ts = stdio_toolset()
            tools = {{t.name: t for t in await ts.start()}}
            print((await tools["t.pid"].call({{}}, ctx())).content, flush=True)
            await asyncio.sleep(120)
        asyncio.run(main())
    """)
    )
    host = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        server_pid = int(host.stdout.readline())
        assert pid_alive(server_pid)
        host.kill()  # SIGKILL: no cleanup code runs in agen
        host.wait()
        deadline = time.monotonic() + 10
        while pid_alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(server_pid)
    finally:
        if host.poll() is None:
            host.kill()


async def test_third_party_time_server_from_pypi_answers_through_the_client() -> None:
    ts = stdio_toolset(
        [], command=str(Path(sys.executable).parent / "mcp-server-time"), name="time"
    )
    tools = {t.name: t for t in await ts.start()}
    try:
        assert "time.get_current_time" in tools
        result = await tools["time.get_current_time"].call({"timezone": "UTC"}, ctx())
        assert not result.is_error
        assert "UTC" in result.content
    finally:
        await ts.close()


@pytest.fixture
def http_server_url() -> Iterator[str]:
    """The test server over streamable HTTP on a free loopback port."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, TEST_SERVER, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


async def test_streamable_http_server_lists_and_calls_tools(http_server_url: str) -> None:
    ts = http_toolset(http_server_url)
    tools = {t.name: t for t in await ts.start()}
    try:
        assert (await tools["h.echo"].call({"text": "over http"}, ctx())).content == "over http"
        meta = json.loads((await tools["h.meta"].call({}, ctx(task_id="t-http"))).content)
        assert meta["agen/taskId"] == "t-http"
        assert ts.healthy()
    finally:
        await ts.close()


async def test_a_server_that_cannot_start_fails_with_its_name_and_stderr() -> None:
    ts = stdio_toolset(
        ["-c", "import sys; sys.stderr.write('boot failed: missing config\\n'); sys.exit(3)"]
    )
    with pytest.raises(UnavailableError) as e:
        await ts.start()
    assert "MCP server t" in e.value.message
    assert "boot failed: missing config" in e.value.message
    assert not ts.healthy()
