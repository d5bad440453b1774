"""What an instance uses to run one leased task: the Executor port and the runner-backed one.

An instance builds its executor once from its definition's bundle (loaded once per digest
by the Manager). The default executor drives the engine (agen.runner); the ``process``
backend runs the same executor in a child ``agen host serve``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from agen.bundle import Bundle
from agen.domain import Outcome, OutcomeStatus
from agen.nest.port import LeasedTask


@dataclass
class ExecResult:
    """How a task's run ended, for CompleteTask (or SuspendTask when ``wait_for`` is set)."""

    status: str  # succeeded | failed | cancelled
    outcome: Outcome | None
    error: str | None = None
    wait_for: str | None = None
    release: str | None = (
        None  # give the task back (ReleaseTask) for this reason; its run resumes later
    )
    count_attempt: bool = False  # ... counting an attempt (the host died mid-task)

    @classmethod
    def crashed(cls, e: Exception) -> ExecResult:
        """The run raised instead of ending: failed, saying what was raised."""
        return cls(
            status="failed",
            outcome=Outcome(status=OutcomeStatus.FAILED, reason="error", summary=str(e)),
            error=f"{type(e).__name__}: {e}",
        )

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON (a host process sends it to its Manager); ``from_dict`` reads it."""
        out = dict(self.__dict__)
        if self.outcome is not None:
            out["outcome"] = self.outcome.model_dump(mode="json")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExecResult:
        outcome = data.get("outcome")
        return cls(
            **{**data, "outcome": None if outcome is None else Outcome.model_validate(outcome)}
        )


class Executor(Protocol):
    async def run(self, task: LeasedTask) -> ExecResult: ...

    async def drain(self) -> None:
        """Ask every running run to stop at its next checkpoint (before its next model call)."""

    def exit_reason(self) -> str | None:
        """Why the executor can take no more work (its host process exited or hung); None while healthy."""

    async def close(self) -> None: ...


ExecutorFactory = Callable[[Bundle, str, Mapping[str, str]], Awaitable[Executor]]
"""Builds one instance's executor from its bundle, its id and the platform secret values the Hub
granted its deployment (``source: platform`` in x-agen/secrets.json; empty when it declares none)."""
ProgressSink = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Where the report_progress tool's values go: the HubPort's ReportProgress (or, in a host
process, the channel to the Manager that forwards them there)."""


def run_request(task: LeasedTask) -> Any:
    """The engine's RunRequest for a leased task (one run per task id, so a retry resumes it)."""
    from agen.bundle.overrides import TaskOverrides
    from agen.runner.types import RunRequest

    return RunRequest(
        input=task.input,
        attachments=task.attachments,
        namespace=task.namespace,
        deployment=task.deployment,
        task_id=task.id,
        conversation_key=task.conversation_key,
        labels=task.labels,
        trust=task.trust,
        source=task.source,
        model_tier=task.model_tier,
        budget_pressure=task.budget_pressure,
        overrides=TaskOverrides.model_validate(task.overrides) if task.overrides else None,
        root_run_id=task.root_run_id,
        parent_run_id=task.parent_run_id,
        attempt=max(1, task.attempts),
        requested_by=task.requested_by,
        locks=task.locks,
        traceparent=task.traceparent,
        depth=task.depth,
    )


def status_of(run_status: str) -> str:
    return {"succeeded": "succeeded", "cancelled": "cancelled"}.get(run_status, "failed")
