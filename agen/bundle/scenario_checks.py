"""Scenario checks: each one looks at a result and gives a score from 0.0 to 1.0 and a verdict.

    {"type": "rubric", "rubric": "cites the order number", "threshold": 0.7}   # a model judges
    {"type": "regex", "pattern": "refund(ed)? #\\d+"}                        # summary (or "path")
    {"type": "number", "path": "$.total", "gte": 10, "lt": 100}               # data by JSON path
    {"type": "calledInOrder", "names": ["shop.find", "shop.refund"]}          # a subsequence
    {"type": "called", "tool": "shop.refund", "args": {"order": 7}}           # arguments of a call
    {"type": "limits", "maxDurationMs": 30000, "maxTokens": 4000, "maxCostUsd": 0.05}
    {"type": "custom", "function": "mychecks:polite", "threshold": 0.5, "args": {...}}

Deterministic checks score 1.0 or 0.0. ``rubric`` scores the judge's grade (the same grader
the runtime reviewer uses, agen/runner/grader.py) and passes at ``threshold``; its reasoning
is kept. ``custom`` calls a Python function with an ``EvalContext`` (agen/evals/context.py).
Every check may carry ``name`` (shown in reports) and ``weight`` (its share of the scenario's
score, default 1).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel


class EvalModel(BaseModel):
    """Scenario files: camelCase keys, unknown fields refused (a typo must not pass as "no check")."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class _Check(EvalModel):
    name: str | None = Field(None, max_length=200, description="shown in reports")
    weight: float = Field(1.0, ge=0.0, description="its share of the scenario's score")


class RubricCheck(_Check):
    """A model grades the result against the rubric (0.0-1.0); passes at ``threshold``."""

    type: Literal["rubric"] = Field(
        description='"rubric": a model grades the result against the rubric'
    )
    rubric: str = Field(
        min_length=1, description="what a good result meets, point by point, shown to the judge"
    )
    description: str | None = Field(
        None, description="the outcome wanted in a sentence, shown to the judge"
    )
    threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="the grade (0.0-1.0) at or above which the check passes"
    )
    model: str | None = Field(
        None, description="the judge's model on the bundle's provider; unset: the harness model"
    )
    max_tokens: int = Field(1024, ge=1, description="output tokens for the judge's answer")


class RegexCheck(_Check):
    """``pattern`` is found (``absent``: is not found) in the summary, or in a data value."""

    type: Literal["regex"] = Field(
        description='"regex": a regular expression found in the summary or a data value'
    )
    pattern: str = Field(
        min_length=1,
        description="a Python regular expression, searched (not matched from the start)",
    )
    path: str | None = Field(
        None,
        pattern=r"^\$",
        description="a JSON path into the outcome's data ($.a.b[0]); unset: the summary",
    )
    ignore_case: bool = Field(False, description="match regardless of case")
    absent: bool = Field(False, description="pass when the pattern is NOT found")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as e:
            raise ValueError(f"not a regular expression: {e}") from None
        return v


class NumberCheck(_Check):
    """A number in the outcome's data by JSON path, compared."""

    type: Literal["number"] = Field(
        description='"number": a number in the data compared with bounds'
    )
    path: str = Field(pattern=r"^\$", description="a JSON path into the outcome's data ($.total)")
    lt: float | None = Field(None, description="the value must be less than this")
    lte: float | None = Field(None, description="the value must be at most this")
    gt: float | None = Field(None, description="the value must be greater than this")
    gte: float | None = Field(None, description="the value must be at least this")
    eq: float | None = Field(None, description="the value must equal this")

    @model_validator(mode="after")
    def _one_bound(self) -> NumberCheck:
        if all(v is None for v in (self.lt, self.lte, self.gt, self.gte, self.eq)):
            raise ValueError('a "number" check needs one of lt, lte, gt, gte, eq')
        return self


class CalledInOrderCheck(_Check):
    """These tools were called in this order (other calls may come between)."""

    type: Literal["calledInOrder"] = Field(
        description='"calledInOrder": tools called in this order'
    )
    names: list[str] = Field(
        min_length=1,
        description="tool names (server.tool), in the order they must be called; other calls may come between",
    )


class CalledCheck(_Check):
    """A tool was called (with arguments that include ``args``), ``times`` times if given."""

    type: Literal["called"] = Field(description='"called": a tool called with these arguments')
    tool: str = Field(min_length=1, description="the tool name (server.tool)")
    args: dict[str, Any] | None = Field(
        None,
        description="arguments the call must include (nested objects: contained); unset: any call",
    )
    times: int | None = Field(
        None, ge=0, description="exactly this many matching calls (0: never called so)"
    )


class LimitsCheck(_Check):
    """What the scenario cost: wall time, tokens (input + output), USD, model turns."""

    type: Literal["limits"] = Field(description='"limits": what the scenario used, at most')
    max_duration_ms: int | None = Field(
        None, ge=0, description="wall time of the scenario so far, in ms"
    )
    max_tokens: int | None = Field(
        None, ge=0, description="input + output tokens of its runs (the judge not counted)"
    )
    max_cost_usd: float | None = Field(
        None, ge=0, description="USD its runs cost, as the provider reports it"
    )
    max_turns: int | None = Field(
        None, ge=0, description="model turns (assistant answers) of its runs"
    )

    @model_validator(mode="after")
    def _one_limit(self) -> LimitsCheck:
        if all(
            v is None
            for v in (self.max_duration_ms, self.max_tokens, self.max_cost_usd, self.max_turns)
        ):
            raise ValueError(
                'a "limits" check needs one of maxDurationMs, maxTokens, maxCostUsd, maxTurns'
            )
        return self


class CustomCheck(_Check):
    """A Python function ``module:function`` (on the bundle folder's path), given an EvalContext."""

    type: Literal["custom"] = Field(description='"custom": a Python function gives the score')
    function: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
        description="module:function, imported with the bundle folder on the path; gets an agen.evals.context.EvalContext, returns EvalResult, a float or a bool",
    )
    threshold: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="the score at or above which it passes (unless the function decides passed)",
    )
    args: dict[str, Any] = Field({}, description="passed to the function as ctx.args")


Check = Annotated[
    RubricCheck
    | RegexCheck
    | NumberCheck
    | CalledInOrderCheck
    | CalledCheck
    | LimitsCheck
    | CustomCheck,
    Field(discriminator="type"),
]


def label(check: _Check) -> str:
    """How a check is named in a report: its ``name``, else its type and its main field."""
    if check.name:
        return check.name
    if isinstance(check, RubricCheck):
        return f"rubric {check.rubric[:40]!r}"
    if isinstance(check, RegexCheck):
        return f"regex /{check.pattern[:40]}/" + (f" on {check.path}" if check.path else "")
    if isinstance(check, NumberCheck):
        return f"number {check.path}"
    if isinstance(check, CalledInOrderCheck):
        return "calledInOrder " + " → ".join(check.names)
    if isinstance(check, CalledCheck):
        return f"called {check.tool}"
    if isinstance(check, CustomCheck):
        return f"custom {check.function}"
    return "limits"
