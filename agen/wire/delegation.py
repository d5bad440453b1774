"""Delegation RPCs (scope ``nest``): what a running task's engine asks of the Hub through its Nest.

A child task's lineage (root, depth, root and parent run, labels, namespace) is derived by the
Hub from ``parent_task_id``, never taken from the caller (seed 000 §5 "Delegation lineage").
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from agen.wire.common import NAME_PATTERN, Model
from agen.wire.observe import RunActivity
from agen.wire.tasks import LockName

Id = Annotated[str, Field(min_length=1, max_length=100)]


class SubmitChildTaskRequest(Model):
    """A child task of a running task (call_agent, start_agent); ``call_key`` makes it idempotent."""

    parent_task_id: Id
    namespace: str = Field("default", pattern=NAME_PATTERN)
    deployment: str = Field(min_length=1, max_length=200)
    input: str
    call_key: str = Field(min_length=1, max_length=300)
    trust: Literal["operator", "trusted", "untrusted"] = "trusted"
    overrides: dict[str, Any] | None = None
    traceparent: str | None = None
    reply_conversation_key: str | None = Field(
        None,
        description="set: detached; the child's result is submitted to the caller's conversation",
    )
    siblings: int = Field(
        1,
        ge=1,
        le=10_000,
        description="the child tasks the caller's turn starts together (this one included): they "
        "split what is left of the tree's budget",
    )


class ChildTask(Model):
    id: str
    deployment: str
    state: str
    outcome: dict[str, Any] | None = None
    error: str | None = None


class ChildTaskResponse(Model):
    child: ChildTask
    created: bool = False


class WaitChildTaskRequest(Model):
    """Until the child ended or ``wait_seconds`` passed; only the child's parent may wait on it."""

    task_id: Id
    child_id: Id
    wait_seconds: float = Field(0, ge=0, le=60)


class CheckTurnRequest(Model):
    task_id: Id


class ChildResult(Model):
    inbox_id: str
    child: ChildTask


class CheckTurnResponse(Model):
    unfinished_children: int = 0
    results: list[ChildResult] = []
    tree_budget_exceeded: bool = False


class AckInboxRequest(Model):
    task_id: Id
    inbox_ids: list[Id] = Field(default_factory=list, max_length=10_000)


class ChildTaskRef(Model):
    """A descendant of ``task_id`` (its own child, or further down)."""

    task_id: Id
    target: Id


class ChildTaskView(Model):
    """What ``query_agent`` shows the model of a task it delegated: where it stands, what it is doing now,
    and its outcome once it ended."""

    id: str
    deployment: str
    state: str
    progress: Any = None
    outcome: dict[str, Any] | None = None
    wait_for: str | None = None
    now: RunActivity | None = None

    def for_model(self) -> dict[str, Any]:
        """The JSON the tool answers with (``now``, without its empty fields, only while a run is under way)."""
        view = self.model_dump(mode="json", exclude={"now"})
        if self.now is not None:
            view["now"] = self.now.model_dump(mode="json", exclude_none=True)
        return view


class QueryChildTaskResponse(Model):
    task: ChildTaskView


class SignalChildTaskRequest(ChildTaskRef):
    message: str = Field(max_length=100_000)


class AcquireLockRequest(Model):
    task_id: Id
    name: LockName
    ttl_seconds: float = Field(300, ge=1, le=86_400)


class AcquireLockResponse(Model):
    fence: int | None = None
    """None: another task holds the lock."""


class ReleaseLockRequest(Model):
    task_id: Id
    name: LockName


class ReleaseLockResponse(Model):
    released: bool


class ResolveChildAgentRequest(Model):
    """Where a running task reaches another agen deployment over A2A (call_agent to a delegate
    with ``via: "a2a"`` or a url naming this Hub's Gateway), and a call token for it."""

    task_id: Id
    namespace: str = Field("default", pattern=NAME_PATTERN)
    deployment: str = Field(min_length=1, max_length=200)


class ResolveChildAgentResponse(Model):
    urls: list[str] = Field(
        [], description="A2A endpoints (/a2a/<ns>/<deployment>) of the Gateways that serve it"
    )
    call_token: str = Field(description="the calling agent's token for this one callee (1 h)")
    expires_ms: int


class CountA2ACallRequest(Model):
    """An A2A call_agent about to be made: it counts towards maxFanOut and maxTotalDelegations."""

    task_id: Id
    call_key: str = Field(min_length=1, max_length=300, pattern=r"^a2a:")
