"""The runner's public shapes: what a caller asks for and what a run ends with.

The Hub/Manager, the SDK and the CLI's embedded path all drive the engine with a
RunRequest and read back a RunResult; everything else is recorded in the Store.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Trust = Literal["operator", "trusted", "untrusted"]
TRUST_RANK: dict[str, int] = {"untrusted": 0, "trusted": 1, "operator": 2}
OutcomeStatus = Literal["done", "partial", "failed", "cancelled", "needs_input", "rejected"]
RunStatus = Literal["running", "waiting_approval", "succeeded", "failed", "cancelled"]


class Outcome(BaseModel):
    """How a run ended (runs.outcome, copied to tasks.outcome)."""

    model_config = ConfigDict(extra="forbid")

    status: OutcomeStatus
    reason: str | None = None
    summary: str = ""
    data: Any = None
    artifacts: list[str] = Field(default_factory=list)

    @property
    def run_status(self) -> RunStatus:
        if self.status in ("done", "partial", "needs_input"):
            return "succeeded"
        if self.status == "cancelled":
            return "cancelled"
        return "failed"


class TaskOverrides(BaseModel):
    """Narrowing a task may apply to its bundle (never widening)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tools: list[str] | None = None
    skills: list[str] | None = None
    system_addendum: str | None = Field(default=None, alias="systemAddendum")
    deny: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    max_turns: int | None = Field(default=None, alias="maxTurns")
    max_run_duration_ms: int | None = Field(default=None, alias="maxRunDurationMs")
    max_tokens_per_run: int | None = Field(default=None, alias="maxTokensPerRun")
    max_usd_per_run: float | None = Field(default=None, alias="maxUsdPerRun")


class RunRequest(BaseModel):
    """One unit of work for the engine. ``task_id`` makes it idempotent (one run per task)."""

    model_config = ConfigDict(extra="forbid")

    input: str
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
    attempt: int = 1
    locks: dict[str, int] = Field(default_factory=dict)


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
