"""The engine's side of delegation: what a run asks the platform for, and how answers read.

A run reaches the Hub only through its Manager's hooks; ``DelegationPort`` is the part of them
delegation uses (the Nest implements it over its HubPort, agen.nest.delegation). The shapes here
are the engine's own, so the runner imports nothing from the API or the Hub.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agen.runner.hooks import RunHooks

TERMINAL = ("succeeded", "failed", "cancelled", "expired")


@dataclass
class ChildSpec:
    """A child task to submit (call_agent, start_agent). The Hub derives its lineage from
    ``parent_task_id``; everything else is what the caller asks for."""

    parent_task_id: str
    deployment: str
    namespace: str
    input: str
    call_key: str  # call:<run>.<step>.<call> or start:<run>.<step>.<call>
    trust: str = "trusted"
    overrides: dict[str, Any] | None = None
    traceparent: str | None = None
    reply_conversation_key: str | None = None  # set: a detached start_agent child replies here


@dataclass
class ChildState:
    id: str
    deployment: str
    state: str
    outcome: dict[str, Any] | None = None
    error: str | None = None

    @property
    def ended(self) -> bool:
        return self.state in TERMINAL


@dataclass
class ChildResult:
    """A joined child's end, delivered once into its parent's run (an inbox row)."""

    inbox_id: str
    child: ChildState


@dataclass
class TurnCheck:
    """What the platform says before each model call of a task's run."""

    unfinished_children: int = 0
    results: list[ChildResult] = field(default_factory=list)
    tree_budget_exceeded: bool = False


class DelegationPort(Protocol):
    async def submit_child(self, spec: ChildSpec) -> ChildState:
        """Submit (or find, by the call key) the child task."""

    async def wait_child(self, task_id: str, child_id: str, wait_s: float) -> ChildState:
        """The child's state once it ended or ``wait_s`` passed (at most 60 s per call)."""

    async def turn_check(self, task_id: str) -> TurnCheck: ...

    async def ack_results(self, task_id: str, inbox_ids: list[str]) -> None:
        """The results were checkpointed into the run: they are not delivered again."""

    async def query_child(self, task_id: str, target: str) -> dict[str, Any]: ...

    async def signal_child(self, task_id: str, target: str, message: str) -> None: ...

    async def acquire_lock(self, task_id: str, name: str, ttl_s: float) -> int | None:
        """The lock's fencing token, or None while another task holds it."""

    async def release_lock(self, task_id: str, name: str) -> bool: ...


def delegation_port(hooks: RunHooks | None) -> DelegationPort | None:
    """The port the Manager's hooks carry (None: an SDK or standalone run, no Hub to delegate through)."""
    return None if hooks is None else hooks.delegation


def outcome_text(child: ChildState) -> str:
    """A child's outcome as its caller reads it (seed 000 §6): ``[partial: max_turns] <report>``
    (nothing before a plain done), then its structured data, if any."""
    out = child.outcome or {}
    status = str(out.get("status") or ("failed" if child.state != "succeeded" else "done"))
    reason = out.get("reason")
    summary = str(out.get("summary") or child.error or "")
    head = "" if status == "done" else f"[{status}: {reason}] " if reason else f"[{status}] "
    text = head + summary
    if out.get("data") is not None:
        text += "\n\n" + json.dumps(out["data"], indent=2, sort_keys=True)
    return text


def result_note(child: ChildState) -> str:
    """The user message a joined child's end becomes in its parent's run."""
    return f"[Child task {child.id} ({child.deployment}) ended] {outcome_text(child)}"
