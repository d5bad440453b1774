"""The MCP tool catalogue: tools that load on demand (seed 001, "MCP Tools").

A bundle with many MCP tools would send every schema with every model call. Past
``builtinTools.toolCatalogue`` MCP tools (those the run may call, after permission rules and
a task's tool allowlist), the model is sent the other tools, ``list_mcp_server_tools`` (whose
description names each server with its one-line description and tool count) and
``activate_tool``: it lists a server's tools as ``name: description`` lines and activates the
ones it needs, whose schemas are sent from the next model call on. An activated tool is the
same Tool object as without the catalogue, so permission rules, approvals, the effect ledger
and redaction treat its calls as before.

Which tools are active is not kept beside the run: it is read back from the conversation's
recorded ``activate_tool`` calls that succeeded (``activated_names``), so the checkpoint that
holds those calls holds the activation, and a resumed run (or the conversation's next run,
whose history shows the calls) sends the same schemas.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from agen.runner.tools.base import Tool, ToolContext, ToolError, ToolResult
from agen.runner.tools.mcp import McpTool

LIST = "list_mcp_server_tools"
ACTIVATE = "activate_tool"
NAMES = (LIST, ACTIVATE)


class Catalogue:
    """One run's tool surface when the catalogue is on: the tools always sent, the MCP tools
    behind the catalogue, and the ones activated so far (in activation order, so the request's
    tool list only grows at its end and a provider's prompt cache keeps what came before)."""

    def __init__(self, always: dict[str, Tool], deferred: dict[str, McpTool]) -> None:
        self.always = always
        self.deferred = deferred
        self.active: list[str] = []
        self.on_change: Callable[[], None] | None = None
        self._meta: dict[str, Tool] = {LIST: ListServerTools(self), ACTIVATE: ActivateTool(self)}

    def everything(self) -> dict[str, Tool]:
        """Every tool the run may call once active (the meta-tools not included)."""
        return {**self.always, **self.deferred}

    def surface(self) -> dict[str, Tool]:
        """The tools sent to the model and callable now."""
        out = dict(self.always)
        out.update(self._meta)
        for wire in self.active:
            out[wire] = self.deferred[wire]
        return out

    def servers(self) -> dict[str, tuple[str, int]]:
        """Server name -> (its one-line description, how many of its tools the run may call)."""
        out: dict[str, tuple[str, int]] = {}
        for tool in self.deferred.values():
            summary, n = out.get(tool.server_name, (tool.server_summary, 0))
            out[tool.server_name] = (summary, n + 1)
        return dict(sorted(out.items()))

    def resolve(self, name: str) -> str | None:
        """The wire name of a catalogue tool named as the model sees it (``server_tool``) or as the
        bundle does (``server.tool``)."""
        if name in self.deferred:
            return name
        return next((w for w, t in self.deferred.items() if t.name == name), None)

    def activate(self, names: Iterable[str]) -> None:
        """Put tools on the surface (names the catalogue does not hold are skipped)."""
        changed = False
        for name in names:
            wire = self.resolve(name)
            if wire is not None and wire not in self.active:
                self.active.append(wire)
                changed = True
        if changed and self.on_change is not None:
            self.on_change()

    def not_active(self, wire: str) -> str | None:
        """The error for a call of a catalogue tool that is not active yet (None: it is not one)."""
        if wire not in self.deferred or wire in self.active:
            return None
        return (
            f"{wire} is in the tool catalogue but not active: call {ACTIVATE} with "
            f'{{"name": "{wire}"}} first; its schema arrives on your next turn'
        )


def plan_catalogue(
    tools: dict[str, Tool],
    threshold: int | None,
    activated: Callable[[], Iterable[str]] = tuple,
) -> Catalogue | None:
    """The catalogue for a run that may call ``tools`` (wire name -> tool), or None when its MCP
    tools are not more than ``threshold`` (None: the catalogue is off) and every schema is sent.
    ``activated()``: the names activated so far (read only when there is a catalogue)."""
    if threshold is None:
        return None
    deferred = {w: t for w, t in tools.items() if isinstance(t, McpTool) and w not in NAMES}
    if len(deferred) <= threshold:
        return None
    always = {w: t for w, t in tools.items() if w not in deferred and w not in NAMES}
    catalogue = Catalogue(always, deferred)
    catalogue.activate(activated())
    return catalogue


def activated_names(messages: Iterable[Any]) -> list[str]:
    """The tool names the recorded ``activate_tool`` calls activated, in order: every assistant
    message's call whose tool result is not an error. ``messages`` are the conversation's Msgs."""
    msgs = list(messages)
    failed = {m.tool_call_id for m in msgs if m.role == "tool" and m.is_error}
    answered = {m.tool_call_id for m in msgs if m.role == "tool"}
    out: list[str] = []
    for m in msgs:
        for c in (m.tool_calls or []) if m.role == "assistant" else []:
            if c.get("name") != ACTIVATE or c["id"] in failed or c["id"] not in answered:
                continue
            name = (c.get("arguments") or {}).get("name")
            if isinstance(name, str):
                out.append(name)
    return out


class ListServerTools(Tool):
    """list_mcp_server_tools(server): the ``name: description`` listing of one server's tools."""

    name = LIST
    bypass_permissions = True  # bookkeeping: what it lists are tools the run may already call
    read_only = True

    def __init__(self, catalogue: Catalogue) -> None:
        self._catalogue = catalogue

    @property
    def description(self) -> str:  # type: ignore[override]
        lines = [
            "List one MCP server's tools as name: description lines. Their schemas are not loaded: "
            f"call {ACTIVATE} with a tool's name to use it (its schema arrives on your next turn). "
            "Servers:"
        ]
        for server, (summary, n) in self._catalogue.servers().items():
            about = f"{summary} " if summary else ""
            lines.append(f"- {server}: {about}({n} tool{'s' if n != 1 else ''})")
        return "\n".join(lines)

    @property
    def input_schema(self) -> dict[str, Any]:  # type: ignore[override]
        return {
            "type": "object",
            "properties": {
                "server": {
                    "type": "string",
                    "enum": list(self._catalogue.servers()),
                    "description": "the server's name",
                }
            },
            "required": ["server"],
        }

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        server = args.get("server")
        servers = self._catalogue.servers()
        if server not in servers:
            raise ToolError(
                f"no MCP server {server!r} in the tool catalogue; the servers are: "
                + ", ".join(servers)
            )
        lines = []
        for wire, tool in self._catalogue.deferred.items():
            if tool.server_name != server:
                continue
            first = (tool.description or "").strip().splitlines()
            mark = " (active)" if wire in self._catalogue.active else ""
            lines.append(f"{wire}{mark}: {first[0].strip() if first else ''}".rstrip(": "))
        return ToolResult("\n".join(lines))


class ActivateTool(Tool):
    """activate_tool(name): promotes a catalogue tool onto the run's tool list for the next turn."""

    name = ACTIVATE
    description = (
        f"Activate an MCP tool listed by {LIST}, so you can call it: its schema arrives on your "
        "next turn and it stays available for the rest of the conversation."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "description": f"the tool's name as {LIST} shows it, e.g. github_create_issue",
            }
        },
        "required": ["name"],
    }
    bypass_permissions = True  # the activated tool's own calls go through the rules as ever
    read_only = True

    def __init__(self, catalogue: Catalogue) -> None:
        self._catalogue = catalogue

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name = str(args.get("name") or "")
        wire = self._catalogue.resolve(name)
        if wire is None:
            raise ToolError(
                f"no tool {name!r} in the tool catalogue; call {LIST} with a server's name to see "
                "its tools"
            )
        if wire in self._catalogue.active:
            return ToolResult(f"{wire} is already active")
        self._catalogue.activate([wire])
        return ToolResult(f"activated {wire}: you can call it from your next turn")
