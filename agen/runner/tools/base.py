"""The tool port: what the runner calls, whatever is behind it (built-ins, MCP, host functions).

A tool has a registered name ``server.tool`` and a wire name ``server_tool`` (what the
model sees). Side-effecting tools go through the effect ledger; idempotent ones carry
an idempotency key derived from their arguments so a resumed run may repeat them.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolResult:
    """What a tool call produced. ``content`` is what the model reads."""

    content: str
    is_error: bool = False
    data: Any = None
    # A suspending tool (e.g. waiting on a child task) sets this instead of a result.
    suspend: str | None = None


class ToolError(Exception):
    """A tool failed in a way the model should read (becomes an error result)."""

    def __init__(self, message: str, *, suspend: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.suspend = suspend


@dataclass(frozen=True)
class CallLedger:
    """What a side-effecting call that may be repeated (``Tool.repeats_started``) keeps in the effect
    ledger while it runs: ``prior`` is what an interrupted attempt of this same call recorded (None
    on a first attempt), ``record`` saves what a repeat needs (call_agent: the remote task's id), so
    the repeat picks the same work up instead of starting it again."""

    prior: dict[str, Any] | None
    record: Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class ToolContext:
    """Everything a tool call may need to know about the run calling it."""

    namespace: str
    deployment: str
    run_id: str
    root_run_id: str
    conversation_id: str
    task_id: str | None = None
    conversation_key: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    trust: str = "trusted"
    workspace: str | None = None
    locks: dict[str, int] = field(default_factory=dict)
    traceparent: str | None = None
    turn: int = 0
    call_id: str = ""
    call_index: int = 0  # the call's place in its turn: <run>.<turn>.<call> keys (call_agent)
    turn_children: int = 1  # child tasks this turn starts: they share what is left of a tree budget
    cancel: asyncio.Event | None = None
    depth: int = 0  # the run's place in a delegation tree (root = 0)
    parent_run_id: str | None = None
    time_left_s: float | None = None  # until the run's maxRunDuration: how long a call may wait
    ledger: CallLedger | None = None  # a repeatable side effect's own notes (call_agent over A2A)

    def meta(self) -> dict[str, Any]:
        """The ``_meta`` keys every MCP call carries (seed 000 §7)."""
        m: dict[str, Any] = {
            "agen/namespace": self.namespace,
            "agen/deployment": self.deployment,
            "agen/taskId": self.task_id or "",
            "agen/runId": self.run_id,
            "agen/rootRunId": self.root_run_id,
            "agen/conversationId": self.conversation_id,
            "agen/conversationKey": self.conversation_key or "",
            "agen/labels": dict(self.labels),
            "agen/trust": self.trust,
            "agen/workspace": self.workspace or "",
        }
        if self.locks:
            m["agen/locks"] = dict(self.locks)
        if self.traceparent:
            m["traceparent"] = self.traceparent
        return m


class Tool(abc.ABC):
    """One callable tool."""

    name: str  # registered name, e.g. "workspace.read" or "finish"
    description: str = ""
    input_schema: dict[str, Any]
    side_effect: bool = False
    idempotent: bool = False
    read_only: bool = False
    untrusted_output: bool = False
    # Built-ins like finish/save_artifact bypass permissions and task tool allowlists.
    bypass_permissions: bool = False
    # Safe to run again when a run resumes with this call unanswered: keyed through the Hub, so a
    # second run finds what the first started (call_agent, start_agent) instead of repeating it.
    resumable: bool = False

    def repeats_started(self, args: dict[str, Any]) -> bool:
        """Whether a call of this tool that started and never recorded its end may run again on
        resume, instead of reporting effect_unknown: only when its repeat is the same call at the
        other end (call_agent over A2A: the recorded remote task, or the same message id)."""
        return False

    def starts_child_for(self, args: dict[str, Any]) -> bool:
        """Whether this call starts a child task of the run (call_agent, start_agent): the
        children a turn starts together split what is left of the tree's budget."""
        return False

    def side_effect_for(self, args: dict[str, Any]) -> bool:
        """Whether this call goes through the effect ledger: ``side_effect`` unless the tool
        decides per call (call_agent: an A2A delegate is a side effect, a child task is not)."""
        return self.side_effect

    @property
    def wire_name(self) -> str:
        return self.name.replace(".", "_")

    def spec(self) -> dict[str, Any]:
        """OpenAI-style function spec sent to the model."""
        return {
            "type": "function",
            "function": {
                "name": self.wire_name,
                "description": self.description,
                "parameters": self.input_schema or {"type": "object", "properties": {}},
            },
        }

    @abc.abstractmethod
    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


class Toolset(abc.ABC):
    """A group of tools with a lifecycle (an MCP server connection, the built-ins)."""

    @abc.abstractmethod
    async def start(self) -> list[Tool]:
        """Connect/prepare and return the tools this set offers."""

    async def close(self) -> None:
        return None

    def healthy(self) -> bool:
        return True

    @property
    def label(self) -> str:
        """How messages name this set (an MCP server's name)."""
        return type(self).__name__
