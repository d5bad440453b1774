"""How a run ended: runs.outcome, copied to tasks.outcome and reported by the Nest.

A pydantic model (not a dataclass like the rows) because it is parsed from untrusted text: the
agent's finish tool arguments and stored JSON. It is built once per run, so validation is cheap
where it matters.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agen.domain.states import OutcomeStatus, RunStatus


class Outcome(BaseModel):
    """How a run ended (runs.outcome, copied to tasks.outcome)."""

    model_config = ConfigDict(extra="forbid")

    status: OutcomeStatus
    reason: str | None = None
    summary: str = ""
    data: Any = None
    artifacts: list[str] = Field(default_factory=list)
    # Set when the bundle declares a review (agen/runner/review.py): rounds, result, satisfied, grade, feedback.
    review: dict[str, Any] | None = None

    @property
    def run_status(self) -> RunStatus:
        if self.status in (OutcomeStatus.DONE, OutcomeStatus.PARTIAL, OutcomeStatus.NEEDS_INPUT):
            return RunStatus.SUCCEEDED
        if self.status == OutcomeStatus.CANCELLED:
            return RunStatus.CANCELLED
        return RunStatus.FAILED

    def stored(self) -> dict[str, Any]:
        """The JSON kept in tasks.outcome and runs.outcome (plain strings; ``review`` only when set)."""
        return self.model_dump(mode="json", exclude={"review"} if self.review is None else None)

    @classmethod
    def ended(cls, status: OutcomeStatus, reason: str, summary: str = "") -> Outcome:
        """An outcome the Hub writes itself (cancelled, expired, max attempts): no data, no artifacts."""
        return cls(status=status, reason=reason, summary=summary)
