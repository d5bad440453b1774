"""Tools that answer from a scenario's canned results: nothing real is ever called.

A call takes the first mocked entry whose name matches and whose ``args`` (if any) are contained
in the call's arguments; a call nothing matches is an error result the model reads, never a call
to a live server. Every call is kept in order, for the checks and the replay diff.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agen.bundle.scenario import MockedTool, wire
from agen.runner.tools.base import Tool, ToolContext, ToolResult, Toolset


@dataclass
class CallLog:
    calls: list[dict[str, Any]] = field(default_factory=list)


class MockTool(Tool):
    def __init__(
        self,
        name: str,
        entries: list[MockedTool],
        log: CallLog,
        *,
        description: str = "",
        parameters: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.description = description or f"{name} (mocked)"
        self.input_schema = parameters or {"type": "object", "properties": {}}
        self.entries = entries
        self.log = log

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.log.calls.append({"name": self.wire_name, "arguments": dict(args)})
        for entry in self.entries:
            if entry.matches(self.name, args):
                return ToolResult(entry.content(), is_error=entry.is_error)
        return ToolResult(
            f"no mocked result for {self.wire_name} with these arguments", is_error=True
        )


class MockToolset(Toolset):
    """One MockTool per distinct tool name in the entries (plus ``specs``: schemas seen in a cassette)."""

    def __init__(
        self,
        entries: list[MockedTool],
        *,
        specs: dict[str, dict[str, Any]] | None = None,
        skip: frozenset[str] | None = None,
    ) -> None:
        self.log = CallLog()
        self._entries = entries
        self._specs = specs or {}
        self._skip = skip or frozenset()

    async def start(self) -> list[Tool]:
        names: dict[str, list[MockedTool]] = {w: [] for w in self._specs}
        first: dict[str, MockedTool] = {}
        for e in self._entries:
            names.setdefault(wire(e.name), []).append(e)
            first.setdefault(wire(e.name), e)
        tools: list[Tool] = []
        for name, entries in names.items():
            if name in self._skip:
                continue
            spec = self._specs.get(name, {})
            head = first.get(name)
            tools.append(
                MockTool(
                    head.name if head else name,
                    entries,
                    self.log,
                    description=str(spec.get("description") or (head.description if head else "")),
                    parameters=spec.get("parameters") or (head.parameters if head else None),
                )
            )
        return tools
