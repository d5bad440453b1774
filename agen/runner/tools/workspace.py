"""The built-in workspace toolset: read, write, edit, glob, grep and run on one run's workspace.

The same tools as ``agen mcp workspace`` (agen.mcpservers.workspace_tools does the work for
both), served in process: no server to start, named like that server's tools would be
(``workspace.read``; the model sees ``workspace_read``), and checked like any MCP tool
(permission rules, approvals, the effect ledger for write, edit and run, redaction of
results). A toolset is made per run, bound to that run's workspace folder; closing it at the
run's end stops whatever its ``run`` commands left running. ``run`` starts in the folder with
a cleared environment (the allowlist a stdio server gets) and, unless harness.json turns the
sandbox off, inside the OS sandbox (agen.runner.sandboxing): the folder is its only writable path,
the network only the allowed hosts, and nothing it starts outlives the command (docs/security.md).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agen.bundle.checks import WORKSPACE
from agen.bundle.config import ToolHints
from agen.errors import AgenError
from agen.mcpservers._shell import (
    DEFAULT_TIMEOUT_S,
    MAX_TIMEOUT_S,
    new_scope,
    scope_started,
    stop_scope,
)
from agen.mcpservers.workspace_tools import (
    GREP_CAP,
    READ_LIMIT,
    READ_ONLY,
    WorkspaceToolError,
    WorkspaceTools,
)
from agen.runner.sandboxing import Sandboxing
from agen.runner.tools.base import Tool, ToolContext, ToolError, ToolResult, Toolset
from agen.runner.tools.mcp_conn import ENV_ALLOWLIST
from agen.sandbox.bwrap import Launch
from agen.sandbox.limits import apply_limits

_PATH = {"type": "string", "description": "a path relative to the workspace folder"}
SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "read": (
        "Read a text file of the workspace with line numbers: from line offset (1-based), limit lines.",
        {
            "properties": {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 1, "default": 1},
                "limit": {"type": "integer", "minimum": 1, "default": READ_LIMIT},
            },
            "required": ["path"],
        },
    ),
    "write": (
        "Write a file in the workspace (replacing it), creating parent folders as needed.",
        {
            "properties": {"path": _PATH, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    ),
    "edit": (
        "Replace an exact piece of text in a workspace file. old_string must occur exactly once "
        "(include surrounding lines to make it unique), or set replace_all to replace every one.",
        {
            "properties": {
                "path": _PATH,
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean", "default": False},
            },
            "required": ["path", "old_string", "new_string"],
        },
    ),
    "glob": (
        "List the workspace files matching a glob pattern such as **/*.py, sorted.",
        {
            "properties": {"pattern": {"type": "string"}, "path": {**_PATH, "default": "."}},
            "required": ["pattern"],
        },
    ),
    "grep": (
        "Search workspace files for a regular expression; prints path:line:text per match. "
        "include limits it to files matching a glob (e.g. *.py); at most limit matches are shown.",
        {
            "properties": {
                "pattern": {"type": "string", "description": "a Python regular expression"},
                "path": {**_PATH, "default": "."},
                "include": {"type": "string"},
                "context": {"type": "integer", "minimum": 0, "default": 0},
                "ignore_case": {"type": "boolean", "default": False},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": GREP_CAP,
                    "default": GREP_CAP,
                },
            },
            "required": ["pattern"],
        },
    ),
    "run": (
        "Run a shell command (sh -c) in the workspace folder; returns its output (long output is "
        "cut in the middle) and exit code. On timeout every process it started is stopped.",
        {
            "properties": {
                "command": {"type": "string"},
                "timeout_seconds": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": MAX_TIMEOUT_S,
                    "default": DEFAULT_TIMEOUT_S,
                },
            },
            "required": ["command"],
        },
    ),
}


def _text(args: dict[str, Any], key: str, default: str | None = None) -> str:
    value = args.get(key, default)
    if not isinstance(value, str):
        raise ToolError(f"{key} must be a string (got {type(value).__name__})")
    return value


def _number(args: dict[str, Any], key: str, default: float) -> float:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"{key} must be a number (got {value!r})")
    return float(value)


class WorkspaceTool(Tool):
    """One tool of the built-in workspace toolset. Flagged as ``agen mcp workspace`` annotates the
    same tool (read/glob/grep read-only; run's output untrusted: it may come from the network),
    and config.json ``tools.workspace.<tool>`` hints override that, as for an MCP tool."""

    def __init__(
        self,
        tool: str,
        box: Callable[[], WorkspaceTools],
        scope: str,
        env: dict[str, str],
        hints: ToolHints | None = None,
        sandbox: Sandboxing | None = None,
    ) -> None:
        self.tool = tool
        self.name = f"{WORKSPACE}.{tool}"
        self.description, schema = SCHEMAS[tool]
        self.input_schema = {"type": "object", **schema}
        self.read_only = tool in READ_ONLY
        h = hints or ToolHints()
        self.side_effect = h.side_effect if h.side_effect is not None else not self.read_only
        self.idempotent = bool(h.idempotent)
        self.untrusted_output = (
            h.untrusted_output if h.untrusted_output is not None else tool == "run"
        )
        self._box = box
        self._scope = scope
        self._env = env
        self._sandbox = sandbox

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return ToolResult(await self._call(args))
        except WorkspaceToolError as e:
            raise ToolError(str(e)) from None

    async def _call(self, args: dict[str, Any]) -> str:
        box = await asyncio.to_thread(self._box)
        if self.tool == "run":
            timeout = _number(args, "timeout_seconds", DEFAULT_TIMEOUT_S)
            sandbox = self._sandbox
            if sandbox is None:
                return await box.run(
                    _text(args, "command"), timeout, scope=self._scope, env=self._env
                )
            try:
                await sandbox.prepare()
            except AgenError as e:  # no bubblewrap here: the model reads why, nothing runs
                raise ToolError(e.message) from None
            where = Launch(workspace=str(box.path), cwd=str(box.path))
            limits = sandbox.policy.limits
            return await box.run(
                _text(args, "command"),
                timeout,
                scope=self._scope,
                env=sandbox.environment(self._env),
                wrap=lambda argv: sandbox.command(argv, where),
                preexec_fn=lambda: apply_limits(limits),
            )
        # the file tools are blocking file system calls: off the event loop
        if self.tool == "read":
            path, offset = _text(args, "path"), int(_number(args, "offset", 1))
            limit = int(_number(args, "limit", READ_LIMIT))
            return await asyncio.to_thread(box.read, path, offset, limit)
        if self.tool == "write":
            path, content = _text(args, "path"), _text(args, "content")
            return await asyncio.to_thread(box.write, path, content)
        if self.tool == "edit":
            path, old, new = (
                _text(args, "path"),
                _text(args, "old_string"),
                _text(args, "new_string"),
            )
            every = bool(args.get("replace_all", False))
            return await asyncio.to_thread(box.edit, path, old, new, every)
        if self.tool == "glob":
            pattern, path = _text(args, "pattern"), _text(args, "path", ".")
            return await asyncio.to_thread(box.glob, pattern, path)
        include = args.get("include")
        if include is not None and not isinstance(include, str):
            raise ToolError("include must be a glob string such as *.py")
        return await asyncio.to_thread(
            box.grep,
            _text(args, "pattern"),
            _text(args, "path", "."),
            include,
            int(_number(args, "context", 0)),
            bool(args.get("ignore_case", False)),
            int(_number(args, "limit", GREP_CAP)),
        )


class WorkspaceToolset(Toolset):
    """The built-in workspace tools over one run's workspace folder."""

    def __init__(
        self,
        path: str,
        tools: tuple[str, ...],
        hints: Mapping[str, ToolHints] | None = None,
        sandbox: Sandboxing | None = None,
    ) -> None:
        self.path = path
        self.sandbox = sandbox
        self.tool_names = tools
        self.hints = dict(hints or {})
        self.scope = new_scope()
        self._box: WorkspaceTools | None = None

    def box(self) -> WorkspaceTools:
        """The tools over the folder, made (and the folder with them) on the first call: most runs
        of most bundles never touch their workspace, and making it for each cost a fake-model task
        half its throughput (mkdir, rmtree and the root's checks, on every run)."""
        if self._box is None:
            Path(self.path).mkdir(parents=True, exist_ok=True)
            self._box = WorkspaceTools(self.path)
        return self._box

    @property
    def label(self) -> str:
        return f"built-in {WORKSPACE} tools"

    async def start(self) -> list[Tool]:
        env = {k: os.environ[k] for k in ENV_ALLOWLIST if os.environ.get(k)}
        return [
            WorkspaceTool(t, self.box, self.scope, env, self.hints.get(t), self.sandbox)
            for t in self.tool_names
        ]

    async def close(self) -> None:
        """Stop every process this run's commands left running (a background server, say); a run that
        ran no command skips the thread hop (most runs: a hop each on a loaded Hub is not free)."""
        if scope_started(self.scope):
            await asyncio.to_thread(stop_scope, self.scope)
        if self.sandbox is not None:
            await self.sandbox.close()
