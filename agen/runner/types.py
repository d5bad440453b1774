"""The runner's public shapes: what a caller asks for and what a run ends with.

The Hub/Manager, the SDK and the CLI's embedded path all drive the engine with a
RunRequest and read back a RunResult; everything else is recorded in the Store.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agen.bundle.overrides import TaskOverrides, Trust
from agen.domain import Outcome, RunStatus
from agen.domain.attachments import Attachment


class RunRequest(BaseModel):
    """One unit of work for the engine. ``task_id`` makes it idempotent (one run per task)."""

    model_config = ConfigDict(extra="forbid")

    input: str
    attachments: list[Attachment] = Field(
        default_factory=list
    )  # files given with the input, stored
    namespace: str = "default"
    deployment: str = ""
    task_id: str | None = None
    conversation_key: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    trust: Trust = "trusted"
    source: str = "api"
    model_tier: str | None = None
    budget_pressure: bool = False
    overrides: TaskOverrides | None = None
    requested_by: str | None = None
    parent_run_id: str | None = None
    root_run_id: str | None = None
    trace_id: str | None = None
    traceparent: str | None = (
        None  # W3C, from the submitter: the run span's parent (its trace id wins)
    )
    attempt: int = 1
    locks: dict[str, int] = Field(default_factory=dict)
    depth: int = 0  # the task's place in a delegation tree (root = 0): agen.depth on A2A calls


class RunResult(BaseModel):
    run_id: str
    status: RunStatus
    outcome: Outcome
    epoch: int = 1
    resumed: bool = False
    # Set when the run stopped without ending (held, or a tool waits on something): resume it later.
    suspended: str | None = None

    @property
    def wait_for(self) -> str | None:
        """What a suspended run waits for (the Manager suspends the task with it)."""
        return self.suspended
