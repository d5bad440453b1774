"""What one task may narrow of its bundle (000 §5): tools, skills, a system addendum, deny/ask
permissions and a lower budget; and the order of trust levels.

Here, below both the wire models (``SubmitTaskRequest.overrides``) and the engine
(``RunRequest.overrides``), so that neither imports the other.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from agen.bundle._base import Trust
from agen.util.duration import parse_duration_ms

__all__ = ["TRUST_RANK", "OverrideBudget", "OverridePermissions", "TaskOverrides", "Trust"]

TRUST_RANK: dict[str, int] = {"untrusted": 0, "trusted": 1, "operator": 2}
"""Trust levels in order: a caller may not ask for more trust than it has."""

DURATION_PATTERN = r"^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h|d))+)$"
"""What parse_duration_ms reads, for the OpenAPI document (the validator gives the readable error)."""


def _duration(value: str) -> str:
    parse_duration_ms(value)  # ValueError names the text and the accepted forms
    return value


class OverridePermissions(BaseModel):
    """A task's extra permission rules: deny and ask only, since an override can never widen."""

    model_config = ConfigDict(extra="forbid")

    deny: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _no_allow(cls, data: Any) -> Any:
        if isinstance(data, dict) and "allow" in data:
            raise ValueError(
                "allow rules are not accepted: task overrides only narrow (use deny or ask)"
            )
        return data


class OverrideBudget(BaseModel):
    """Per-run limits a task may lower (a looser value never widens the bundle's own)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    max_turns: int | None = Field(default=None, ge=1, le=1_000_000, alias="maxTurns")
    max_run_duration: (
        Annotated[
            str, AfterValidator(_duration), Field(json_schema_extra={"pattern": DURATION_PATTERN})
        ]
        | None
    ) = Field(default=None, alias="maxRunDuration")
    max_tokens_per_run: int | None = Field(
        default=None, ge=1, le=2**63 - 1, alias="maxTokensPerRun"
    )
    max_usd_per_run: float | None = Field(default=None, gt=0, le=1e12, alias="maxUsdPerRun")


class TaskOverrides(BaseModel):
    """Narrowing a task may apply to its bundle (never widening), in the seed's shape (000 §5):
    ``tools``, ``skills``, ``systemAddendum``, ``permissions`` (deny/ask) and ``budget``.

    SubmitTask validates it, so a bad override is a 400 naming the field, not a failed run later.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tools: list[str] | None = None
    skills: list[str] | None = None
    system_addendum: str | None = Field(default=None, alias="systemAddendum")
    permissions: OverridePermissions = Field(default_factory=OverridePermissions)
    budget: OverrideBudget = Field(default_factory=OverrideBudget)

    @property
    def deny(self) -> list[str]:
        return self.permissions.deny

    @property
    def ask(self) -> list[str]:
        return self.permissions.ask

    @property
    def max_turns(self) -> int | None:
        return self.budget.max_turns

    @property
    def max_run_duration_ms(self) -> int | None:
        d = self.budget.max_run_duration
        return None if d is None else parse_duration_ms(d)

    @property
    def max_tokens_per_run(self) -> int | None:
        return self.budget.max_tokens_per_run

    @property
    def max_usd_per_run(self) -> float | None:
        return self.budget.max_usd_per_run

    def stored(self) -> dict[str, Any]:
        """The JSON kept on the task (wire names, only what was set)."""
        return self.model_dump(by_alias=True, exclude_defaults=True)
