"""Ports the loop consults before a tool call: the permission policy and the approval gate.

The loop asks ``ToolPolicy`` which tools the model may see and what to do with a
concrete call (allow / ask / deny); on "ask" it asks the ``ApprovalGate`` and waits.
Implementations: the bundle's permission rules (agen.runner.permissions), a durable
Store-backed gate for managed runs and a callback gate for the SDK.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Literal

from agen.runner.tools.base import Tool, ToolContext

Decision = Literal["allow", "ask", "deny"]


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    rule: str | None = None  # which rule matched, for spans and error messages


@dataclass(frozen=True)
class ApprovalRequest:
    namespace: str
    deployment: str
    run_id: str
    task_id: str | None
    call_id: str
    tool: str
    arguments: dict[str, Any]  # already redacted
    requested_by: str | None = None


@dataclass(frozen=True)
class ApprovalDecision:
    approved: bool
    note: str | None = None
    decided_by: str | None = None
    pending: str | None = (
        None  # no decision yet: the id of the durable approval the run suspends on
    )


class ToolPolicy(abc.ABC):
    @abc.abstractmethod
    def visible(self, tool: Tool) -> bool:
        """False for tools a static deny (or a task allowlist) hides from the model."""

    @abc.abstractmethod
    async def check(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Verdict: ...


class ApprovalGate(abc.ABC):
    @abc.abstractmethod
    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        """Wait until a person (or the SDK host's callback) decides, or return ``pending`` (the approval's
        id) when the run should suspend until someone does and resume from its checkpoint."""


class AllowAll(ToolPolicy):
    """For code-built SDK agents with no permission rules: every tool allowed."""

    def visible(self, tool: Tool) -> bool:
        return True

    async def check(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Verdict:
        return Verdict("allow")


class DenyAsks(ApprovalGate):
    """No one to ask (e.g. an embedded one-shot run with no approver): asks are denied."""

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(False, note="no approver is configured for this run")
