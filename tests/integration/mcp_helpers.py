"""Shared bits for the MCP tests: building toolsets on real servers, a run context."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agen.bundle.agent import Secrets
from agen.bundle.config import ToolHints
from agen.bundle.standard import HttpServer, StdioServer
from agen.runner.redact import Redactor
from agen.runner.secrets import resolve_secrets
from agen.runner.tools.base import ToolContext
from agen.runner.tools.mcp import McpToolset

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TEST_SERVER = str(FIXTURES / "mcp_test_server.py")


def ctx(**kw: Any) -> ToolContext:
    base: dict[str, Any] = {
        "namespace": "default",
        "deployment": "dep",
        "run_id": "run-1",
        "root_run_id": "run-1",
        "conversation_id": "conv-1",
    }
    base.update(kw)
    return ToolContext(**base)


def stdio_toolset(
    args: list[str] | None = None,
    *,
    command: str = sys.executable,
    env: dict[str, str] | None = None,
    secrets: dict[str, dict[str, str]] | None = None,
    hints: dict[str, ToolHints] | None = None,
    name: str = "t",
    redactor: Redactor | None = None,
    workspace: str | None = None,
) -> McpToolset:
    redactor = redactor or Redactor()
    resolved = resolve_secrets(Secrets.model_validate({"secrets": secrets or {}}), redactor)
    server = StdioServer(
        command=command, args=args if args is not None else [TEST_SERVER], env=env or {}
    )
    return McpToolset(name, server, resolved, redactor, hints, workspace=workspace)


def http_toolset(url: str, headers: dict[str, str] | None = None, name: str = "h") -> McpToolset:
    redactor = Redactor()
    resolved = resolve_secrets(Secrets(), redactor)
    server = HttpServer(type="http", url=url, headers=headers or {})
    return McpToolset(name, server, resolved, redactor)


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


async def eventually(predicate: Callable[[], bool], within_s: float = 10.0) -> bool:
    """Poll until ``predicate()`` holds (True) or the timeout passes (False)."""
    for _ in range(int(within_s / 0.02)):
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
