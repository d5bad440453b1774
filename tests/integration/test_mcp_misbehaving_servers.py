"""MCP servers that misbehave fail in one clear line, and a hanging one is not waited on for long."""

from __future__ import annotations

import gc
import logging
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agen.bundle.agent import Secrets
from agen.bundle.standard import StdioServer
from agen.errors import UnavailableError
from agen.runner.redact import Redactor
from agen.runner.secrets import resolve_secrets
from agen.runner.tools.mcp import McpToolset
from tests.integration.mcp_helpers import ctx, http_toolset, stdio_toolset

BANNER_SERVER = """
print("Welcome to BannerServer 1.0 -- ready!", flush=True)
from mcp.server.mcpserver import MCPServer

server = MCPServer("banner", log_level="WARNING")

@server.tool()
def hello() -> str:
    return "hello back"

server.run()
"""

HANGING_SERVER = """
import os, sys, time
with open(sys.argv[1], "a") as f:
    f.write(f"{os.getpid()}\\n")
time.sleep(3600)  # never answers initialize
"""


class _Refuses(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(401, "Unauthorized")
        self.send_header("WWW-Authenticate", 'Bearer realm="mcp"')
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"missing or bad token")

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    httpd.shutdown()
    httpd.server_close()


async def test_an_http_server_answering_401_is_reported_with_its_status_and_what_to_check(
    refusing_url: str,
) -> None:
    ts = http_toolset(refusing_url, name="remote")
    try:
        with pytest.raises(UnavailableError) as raised:
            await ts.start()
    finally:
        await ts.close()
    message = raised.value.message
    assert "\n" not in message
    assert message.startswith("MCP server remote (") and "HTTP 401 Unauthorized" in message
    assert "mcp.json mcpServers.remote.headers" in message


async def test_a_banner_on_stdout_is_one_warning_line_naming_the_server_not_a_traceback(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = tmp_path / "banner_server.py"
    script.write_text(BANNER_SERVER)
    ts = stdio_toolset([str(script)], name="chatty")
    caplog.set_level(logging.DEBUG)
    try:
        tools = {t.name: t for t in await ts.start()}
        assert (await tools["chatty.hello"].call({}, ctx())).content == "hello back"
    finally:
        await ts.close()
    about = [r for r in caplog.records if "Welcome to BannerServer" in r.getMessage()]
    assert len(about) == 1 and about[0].levelno == logging.WARNING
    line = about[0].getMessage()
    assert "\n" not in line and "MCP server chatty" in line and "stderr" in line
    assert not [r for r in caplog.records if r.exc_info or r.name.startswith("mcp.client")]


def hanging_toolset(tmp_path: Path, starts: Path) -> McpToolset:
    script = tmp_path / "hanging_server.py"
    script.write_text(HANGING_SERVER)
    redactor = Redactor()
    server = StdioServer.model_validate(
        {"command": sys.executable, "args": [str(script), str(starts)], "startupTimeoutMs": 500}
    )
    return McpToolset("stuck", server, resolve_secrets(Secrets(), redactor), redactor)


async def test_a_server_that_never_answers_initialize_fails_after_its_startup_timeout_and_is_not_restarted_at_once(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    starts = tmp_path / "starts.txt"
    first = hanging_toolset(tmp_path, starts)
    try:
        with pytest.raises(UnavailableError) as raised:
            await first.start()
    finally:
        await first.close()
    message = raised.value.message
    assert "\n" not in message
    assert "MCP server stuck" in message and "did not answer initialize within 0.5s" in message
    assert "mcpServers.stuck.startupTimeoutMs" in message

    again = hanging_toolset(tmp_path, starts)  # e.g. the instance is started again
    try:
        with pytest.raises(UnavailableError) as raised:
            await again.start()
    finally:
        await again.close()
    assert (
        "not started again" in raised.value.message and "startupTimeoutMs" in raised.value.message
    )
    assert (
        len(starts.read_text().splitlines()) == 1
    )  # the hung server was spawned once, not per start

    gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
