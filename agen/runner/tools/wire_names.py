"""Model-facing tool names: ``server_tool`` when that is unambiguous, else with a stable hash.

Providers accept ``^[A-Za-z0-9_-]{1,64}$``. Joining server and tool with ``_`` is ambiguous
when the server name holds a ``_`` (server ``a_b`` tool ``c`` vs server ``a`` tool ``b_c``),
when the tool name holds characters that must be replaced, or when the result passes 64
characters; those names get an 8-hex-digit hash of the exact (server, tool) pair instead,
so every name is unique by construction. What is left (a hash clash, a server tool named
like a built-in) is refused when the tools are listed, naming both sources.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from agen.errors import InvalidError
from agen.runner.tools.base import Tool

WIRE_MAX = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_PLAIN_SERVER = re.compile(r"^[A-Za-z0-9-]+$")
_PLAIN_TOOL = re.compile(r"^[A-Za-z0-9_-]+$")
_HASH_LEN = 8


def mcp_wire_name(server: str, tool: str) -> str:
    """``server_tool`` if reading it back gives exactly (server, tool), else a hashed form."""
    plain = f"{server}_{tool}"
    if _PLAIN_SERVER.match(server) and _PLAIN_TOOL.match(tool) and len(plain) <= WIRE_MAX:
        return plain
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_LEN]
    return f"{_UNSAFE.sub('_', plain)[: WIRE_MAX - _HASH_LEN - 1]}_{digest}"


def source_of(tool: Tool) -> str:
    """Where a tool comes from, for error messages."""
    server = getattr(tool, "server_name", None)
    remote = getattr(tool, "remote_name", None)
    if server is not None and remote is not None:
        return f"MCP server {server!r} tool {remote!r}"
    return f"built-in tool {tool.name!r}"


def by_wire_name(tools: Iterable[Tool]) -> dict[str, Tool]:
    """Tools keyed by model-facing name; two tools with the same name are refused, naming both."""
    named: dict[str, Tool] = {}
    for tool in tools:
        seen = named.get(tool.wire_name)
        if seen is not None and seen is not tool:
            raise InvalidError(
                f"two tools would reach the model as {tool.wire_name!r}: {source_of(seen)} and "
                f"{source_of(tool)}; rename one of the servers in mcp.json (or the tool) so one is not hidden",
                tool=tool.wire_name,
            )
        named[tool.wire_name] = tool
    return named
