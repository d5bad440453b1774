"""The engine's side of delegation: what a run asks the platform for, and how answers read.

A run reaches the Hub only through its Manager's hooks; ``DelegationPort`` is the part of them
delegation uses (the Nest implements it over its HubPort, agen.nest.delegation). The shapes here
are the engine's own, so the runner imports nothing from the API or the Hub.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agen.runner.hooks import RunHooks
    from agen.wire.delegation import ChildTaskView

from agen.domain.delegation import ChildState, outcome_text, result_note

__all__ = [  # a child's state and its note are agen.domain.delegation's; re-exported for the engine
    "ChildResult",
    "ChildSpec",
    "ChildState",
    "DelegationPort",
    "ResolvedAgent",
    "TurnCheck",
    "delegation_port",
    "outcome_text",
    "result_note",
]


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
    siblings: int = 1  # the child tasks its turn starts: they split what is left of a tree budget


@dataclass(frozen=True)
class ResolvedAgent:
    """Where to reach an agen deployment over A2A, and the call token to present there."""

    urls: list[str]
    call_token: str
    expires_ms: int


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

    async def query_child(self, task_id: str, target: str) -> ChildTaskView: ...

    async def signal_child(self, task_id: str, target: str, message: str) -> None: ...

    async def acquire_lock(self, task_id: str, name: str, ttl_s: float) -> int | None:
        """The lock's fencing token, or None while another task holds it."""

    async def release_lock(self, task_id: str, name: str) -> bool: ...

    async def resolve_agent(
        self, task_id: str, namespace: str, deployment: str, *, caller: str
    ) -> ResolvedAgent:
        """The deployment's Gateway URLs and a call token naming this task's deployment
        (``caller``: ``<ns>/<deployment>``, seed 000 §10); the last answer is used while the Hub
        is unreachable, until its token expires."""

    async def count_a2a_call(self, task_id: str, call_key: str) -> None:
        """Count an A2A call towards maxFanOut and maxTotalDelegations; refused over a limit."""


def delegation_port(hooks: RunHooks | None) -> DelegationPort | None:
    """The port the Manager's hooks carry (None: an SDK or standalone run, no Hub to delegate through)."""
    return None if hooks is None else hooks.delegation
