"""MCP servers as tools: one toolset per mcp.json server, on the official MCP SDK.

A server's tool ``read`` of server ``workspace`` is registered as ``workspace.read`` and
sent to the model as ``workspace_read`` (with a stable hash suffix when that join would be
ambiguous or too long: see wire_names.py). Hints decide how the engine treats a call:
side effects unless the server marks it read-only, idempotent (retry-safe, keyed by its
arguments) from ``idempotentHint`` or config.json tools.<server>.<tool>.idempotent,
untrusted output from ``openWorldHint`` or ``untrustedOutput``. A call whose server died
is retried once on a fresh connection only when repeating it is safe.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agen.bundle.config import ToolHints
from agen.bundle.standard import HttpServer, StdioServer
from agen.errors import AgenError
from agen.runner.redact import Redactor
from agen.runner.sandboxing import Sandboxing
from agen.runner.secrets import ResolvedSecrets
from agen.runner.tools.base import Tool, ToolContext, ToolError, ToolResult, Toolset
from agen.runner.tools.mcp_conn import ServerConn, describe
from agen.runner.tools.wire_names import by_wire_name, mcp_wire_name

CALL_TIMEOUT_S = 600.0
LoginNeededHook = Callable[[ToolContext, str, str], Awaitable[None]]
"""Told (call context, server, message) when a call failed because the server's OAuth login must be renewed."""


class McpTool(Tool):
    """One tool of an MCP server; calls go through the server's shared connection."""

    def __init__(self, toolset: McpToolset, remote: Any, hints: ToolHints | None) -> None:
        self._toolset = toolset
        self.remote_name: str = remote.name
        self.server_name = toolset.server_name
        self.name = f"{toolset.server_name}.{remote.name}"
        self.description = remote.description or remote.title or ""
        self.input_schema = dict(remote.input_schema or {"type": "object", "properties": {}})
        ann = remote.annotations
        self.read_only = bool(ann and ann.read_only_hint)
        hinted_idempotent = bool(ann and ann.idempotent_hint)
        hinted_open = bool(ann and ann.open_world_hint)
        h = hints or ToolHints()
        self.side_effect = h.side_effect if h.side_effect is not None else not self.read_only
        self.idempotent = h.idempotent if h.idempotent is not None else hinted_idempotent
        self.untrusted_output = (
            h.untrusted_output if h.untrusted_output is not None else hinted_open
        )

    @property
    def wire_name(self) -> str:
        return mcp_wire_name(self.server_name, self.remote_name)

    @property
    def server_summary(self) -> str:
        """The server's one-line description (the tool catalogue lists servers by it)."""
        return self._toolset.summary

    @property
    def retry_safe(self) -> bool:
        """Safe to send again after the server died mid-call."""
        return self.idempotent or self.read_only

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self._toolset.call_tool(self, args, ctx)


class McpToolset(Toolset):
    """The tools of one MCP server (stdio or streamable HTTP) behind one live connection."""

    def __init__(
        self,
        server_name: str,
        server_config: StdioServer | HttpServer,
        secrets: ResolvedSecrets,
        redactor: Redactor,
        tool_config: dict[str, ToolHints] | None = None,
        *,
        workspace: str | None = None,
        cwd_base: str | None = None,
        call_timeout_s: float = CALL_TIMEOUT_S,
        on_login_needed: LoginNeededHook | None = None,
        sandbox: Sandboxing | None = None,
        env_grant: tuple[str, ...] = (),
    ) -> None:
        self.server_name = server_name
        self._on_login_needed = on_login_needed
        self._redactor = redactor
        self._hints = tool_config or {}
        self._timeout = call_timeout_s
        self.conn = ServerConn(
            server_name,
            server_config,
            secrets,
            redactor,
            workspace=workspace,
            cwd_base=cwd_base,
            sandbox=sandbox,
            env_grant=env_grant,
        )
        self.tools: list[McpTool] = []
        self.summary = ""  # what the server says it is, in a line (the tool catalogue shows it)

    async def start(self) -> list[Tool]:
        live = await self.conn.get()
        remote: list[Any] = []
        cursor: str | None = None
        try:
            while True:
                page = await live.client.list_tools(cursor=cursor)
                remote.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        except Exception as e:
            raise self._unavailable(f"listing its tools failed: {describe(e)}") from None
        self.summary = _summary(live.client)
        tools = [McpTool(self, t, self._hints.get(t.name)) for t in remote]
        by_wire_name(tools)  # a server listing one tool twice hides one of them
        self.tools = tools
        return list(self.tools)

    async def close(self) -> None:
        await self.conn.close()

    def healthy(self) -> bool:
        return self.conn.healthy()

    @property
    def label(self) -> str:
        return self.server_name

    async def call_tool(self, tool: McpTool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return await self._call(tool, args, ctx)
        except ToolError:
            why = self.conn.login_needed
            if why is None:
                raise
            # the OAuth login needs a person: said once per call, with an event for whoever watches
            live = self.conn.current()
            if live is not None:
                self.conn.mark_dead(live.generation)
            if self._on_login_needed is not None:
                await self._on_login_needed(ctx, self.server_name, why)
            raise ToolError(f"{tool.name} was not called: {why}") from None

    async def _call(self, tool: McpTool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            live = await self.conn.get()
        except AgenError as e:
            raise ToolError(f"{tool.name} is unavailable: {e.message}") from None
        try:
            result = await self._send(live.client, tool, args, ctx)
        except _ConnectionLost as lost:
            self.conn.mark_dead(live.generation)
            if not tool.retry_safe:
                raise ToolError(
                    f"MCP server {self.server_name} stopped during the call to {tool.name} ({lost}); "
                    "it was not retried because the tool is neither read-only nor idempotent, "
                    "so it may or may not have taken effect: check before calling it again"
                ) from None
            try:
                live = await self.conn.reconnect(live.generation)
                result = await self._send(live.client, tool, args, ctx)
            except (_ConnectionLost, AgenError) as again:
                raise ToolError(
                    f"MCP server {self.server_name} stopped during the call to {tool.name} and again "
                    f"on the one retry: {again}"
                ) from None
        return self._result(result)

    async def _send(
        self, client: Any, tool: McpTool, args: dict[str, Any], ctx: ToolContext
    ) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        try:
            return await client.call_tool(
                tool.remote_name, args, read_timeout_seconds=self._timeout, meta=ctx.meta()
            )
        except MCPError as e:
            if e.code == CONNECTION_CLOSED:
                raise _ConnectionLost(e.message) from None
            status = self.conn.http_error()  # the SDK drops an HTTP server's status; say it
            extra = f", {status}" if status else ""
            raise ToolError(
                self._redactor.redact(
                    f"{tool.name} failed: {e.message} (MCP error {e.code}{extra})"
                )
            ) from None
        except TimeoutError:
            raise ToolError(f"{tool.name} did not answer within {self._timeout:g}s") from None
        except (OSError, EOFError) as e:
            raise _ConnectionLost(describe(e)) from None
        except Exception as e:
            if _is_transport_error(e):
                raise _ConnectionLost(describe(e)) from None
            raise ToolError(self._redactor.redact(f"{tool.name} failed: {describe(e)}")) from None

    def _result(self, result: Any) -> ToolResult:
        text = "\n".join(_block_text(b) for b in result.content)
        if not text and result.structured_content is not None:
            import json

            text = json.dumps(result.structured_content, ensure_ascii=False)
        return ToolResult(
            content=self._redactor.redact(text),
            is_error=bool(result.is_error),
            data=self._redactor.redact_obj(result.structured_content),
        )

    def _unavailable(self, what: str) -> AgenError:
        from agen.errors import UnavailableError

        return UnavailableError(
            self._redactor.redact(f"MCP server {self.server_name}: {what}"), server=self.server_name
        )


class _ConnectionLost(Exception):
    """The server went away under a call (process died, HTTP connection dropped)."""


def _is_transport_error(e: BaseException) -> bool:
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    mod = type(e).__module__
    return mod.startswith(("httpx", "httpcore", "anyio")) or isinstance(e, ConnectionError)


def _summary(client: Any) -> str:
    """A server's own one-line description: its serverInfo description or title, else the first
    line of its instructions (empty when it gives none)."""
    info = client.server_info
    for text in (
        getattr(info, "description", None),
        getattr(info, "title", None),
        client.instructions,
    ):
        line = (text or "").strip().splitlines()
        if line and line[0].strip():
            return line[0].strip()[:200]
    return ""


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
    if kind == "resource":
        res = block.resource
        return str(res.text) if hasattr(res, "text") else f"[binary resource {res.uri}]"
    if kind == "resource_link":
        return f"[resource {block.uri}]"
    return str(block)
