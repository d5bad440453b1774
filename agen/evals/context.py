"""What a custom evaluator gets and gives back (the ``custom`` check: ``"function": "module:fn"``).

    from agen.evals.context import EvalContext, EvalResult

    def polite(ctx: EvalContext) -> EvalResult:          # or: -> float | bool; may be async
        said = ctx.summary.lower()
        return EvalResult(score=1.0 if "please" in said else 0.0, reason="asked nicely?")

The module is imported with the bundle folder first on ``sys.path`` (keep evaluators beside the
scenarios, versioned with the bundle). A float is the score (0.0-1.0; passes at the check's
``threshold``); a bool is 1.0 or 0.0; an ``EvalResult`` may also decide ``passed`` itself. An
exception fails the check with its message, it never stops the eval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One tool call of the conversation, with the result the (mocked) tool gave."""

    name: str  # as the model called it (``shop_refund``)
    arguments: dict[str, Any]
    result: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class EvalContext:
    """A scenario's result as the checks see it, after one turn or at the end of the conversation."""

    scenario: str
    input: str  # the user message of the turn checked
    turn: int  # 1-based: which user message of the scenario this result answers
    status: str  # the outcome's status: done, partial, failed, needs_input
    summary: str
    data: Any
    calls: list[ToolCall]  # every tool call of the conversation so far, in order, finish included
    duration_ms: int  # wall time of the conversation so far
    input_tokens: int
    output_tokens: int
    cost_usd: float
    model_turns: int  # assistant turns so far
    args: dict[str, Any] = field(default_factory=dict)  # the check's own "args"

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class EvalResult:
    """A custom evaluator's answer: a score from 0.0 to 1.0, optionally its own verdict and why."""

    score: float
    passed: bool | None = None  # None: passed when score >= the check's threshold
    reason: str = ""
