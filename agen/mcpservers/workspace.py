"""The built-in workspace MCP server: read, write, edit, glob, grep and run, inside one root.

Run as ``agen mcp workspace --root DIR``. The tools are those of workspace_tools.py (the same
functions the Runner's built-in workspace toolset calls in process), so their confinement and
messages are the same either way. read/glob/grep are marked read-only; write/edit/run are not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from agen.mcpservers._shell import DEFAULT_TIMEOUT_S, stop_everything, stop_everything_on_exit
from agen.mcpservers.workspace_tools import READ_LIMIT, WorkspaceToolError, WorkspaceTools

T = TypeVar("T")


def build_server(
    root: str, *, allow_run: bool = True, run_timeout_s: float = DEFAULT_TIMEOUT_S
) -> Any:
    """An MCPServer exposing the workspace tools over ``root``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    tools = WorkspaceTools(root)
    server = MCPServer(
        "agen-workspace",
        instructions=(
            f"Files inside the workspace {tools.path} (paths are relative to it; read/write/edit/glob/grep "
            "cannot leave it). run executes shell commands there as the user, without that confinement."
        ),
        log_level="WARNING",
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

    def answer(call: Callable[[], T]) -> T:
        try:
            return call()
        except WorkspaceToolError as e:
            raise ToolError(str(e)) from None

    @server.tool(annotations=read_only)
    def read(path: str, offset: int = 1, limit: int = READ_LIMIT) -> str:
        """Read a text file with line numbers. offset is the first line (1-based), limit the line count."""
        return answer(lambda: tools.read(path, offset, limit))

    @server.tool(annotations=writes)
    def write(path: str, content: str) -> str:
        """Write a file (replacing it), creating parent directories as needed."""
        return answer(lambda: tools.write(path, content))

    @server.tool(annotations=writes)
    def edit(path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
        """Replace one exact, unique occurrence of old_string with new_string (every occurrence
        with replace_all)."""
        return answer(lambda: tools.edit(path, old_string, new_string, replace_all))

    @server.tool(annotations=read_only)
    def glob(pattern: str, path: str = ".") -> str:
        """Files matching a glob pattern such as **/*.py, sorted, relative to the workspace root."""
        return answer(lambda: tools.glob(pattern, path))

    @server.tool(annotations=read_only)
    def grep(
        pattern: str,
        path: str = ".",
        include: str | None = None,
        context: int = 0,
        ignore_case: bool = False,
    ) -> str:
        """Regex search in files (optionally only those matching the include glob), with context lines."""
        return answer(lambda: tools.grep(pattern, path, include, context, ignore_case))

    if allow_run:

        @server.tool(annotations=ToolAnnotations(read_only_hint=False, open_world_hint=True))
        async def run(command: str, timeout_seconds: float | None = None) -> str:
            """Run a shell command (sh -c) with the workspace root as working directory; returns when the
            shell exits. Not confined to the root. Default timeout as configured, 10 minutes at most;
            on timeout every process the command started is stopped."""
            limit = run_timeout_s if timeout_seconds is None else timeout_seconds
            try:
                return await tools.run(command, limit)
            except WorkspaceToolError as e:
                raise ToolError(str(e)) from None

    return server


def serve(root: str, *, allow_run: bool = True, run_timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """Serve over stdio until the client goes away; then stop every process a ``run`` started."""
    server = build_server(root, allow_run=allow_run, run_timeout_s=run_timeout_s)
    stop_everything_on_exit()
    try:
        server.run()
    finally:
        stop_everything()
