"""Per-run budgets and guards: turns, duration, tokens, USD, repeated failures, stuck turns.

Token budgets always apply (cached input weighted by budget.cachedInputWeight); USD budgets
only when the provider reports cost. Past half of any limit the model is told, in a late
system line that follows the cacheable prefix.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agen.runner.providers.base import ModelUsage
from agen.util.canonical import canonical_json

FAILURE_REPEATS = 3  # the same call failing with the same error this many times in a row is refused
SDK_DEFAULT_OUTPUT = 8192

REASON_TEXT = {
    "max_turns": "the maximum number of turns for this run",
    "max_run_duration": "the maximum duration of this run",
    "max_tokens": "the token budget of this run",
    "max_usd": "the cost budget of this run",
    "stuck": "a loop: the same step repeated without progress",
    "tree_budget": "the budget of the whole task tree this run belongs to",
}


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class RunLimits:
    max_turns: int = 50
    max_run_duration_ms: int = 30 * 60_000
    max_tokens: int | None = None
    max_usd: float | None = None
    report_tokens: int = 1024
    stuck_repeats: int = 3
    cached_weight: float = 0.1
    max_output_tokens: int | None = 8192


@dataclass
class Budget:
    """What a run has used, compared against its limits."""

    limits: RunLimits
    started_ms: int
    turns: int = 0
    tokens: float = 0.0
    usd: float = 0.0
    usd_known: bool = False
    now_ms: Callable[[], int] = field(default=_wall_ms)

    def time_left_s(self) -> float:
        """Seconds until maxRunDuration: the longest a tool call (an A2A delegation) may wait."""
        return max(0.0, (self.started_ms + self.limits.max_run_duration_ms - self.now_ms()) / 1000)

    def add(self, usage: ModelUsage) -> None:
        cached = min(usage.cached_tokens, usage.input_tokens)
        self.tokens += (
            (usage.input_tokens - cached) + cached * self.limits.cached_weight + usage.output_tokens
        )
        if usage.cost_usd is not None:
            self.usd += usage.cost_usd
            self.usd_known = True

    def fractions(self) -> dict[str, float]:
        lim = self.limits
        out = {
            "max_turns": self.turns / lim.max_turns,
            "max_run_duration": (self.now_ms() - self.started_ms) / max(lim.max_run_duration_ms, 1),
        }
        if lim.max_tokens:
            out["max_tokens"] = self.tokens / lim.max_tokens
        if lim.max_usd and self.usd_known:
            out["max_usd"] = self.usd / lim.max_usd
        return out

    def exceeded(self) -> str | None:
        """The first limit reached (its reason code), or None."""
        for reason, used in self.fractions().items():
            if used >= 1.0:
                return reason
        return None

    def late_lines(self) -> list[str]:
        """Budget notes for limits past 50 % (kept out of the cacheable prompt prefix)."""
        lim = self.limits
        lines = []
        for reason, used in self.fractions().items():
            if used < 0.5:
                continue
            if reason == "max_turns":
                detail = f"{self.turns} of {lim.max_turns} turns used"
            elif reason == "max_run_duration":
                detail = f"{(self.now_ms() - self.started_ms) // 1000}s of {lim.max_run_duration_ms // 1000}s used"
            elif reason == "max_tokens":
                detail = f"{int(self.tokens)} of {lim.max_tokens} tokens used"
            else:
                detail = f"${self.usd:.4f} of ${lim.max_usd} used"
            lines.append(
                f"Budget: {detail} ({min(used, 1.0):.0%} of {REASON_TEXT[reason]}). "
                "Prioritise finishing; call finish when the work is done."
            )
        return lines

    def max_tokens_for_call(self) -> int | None:
        """maxOutputTokens lowered to what remains of maxTokensPerRun."""
        out = self.limits.max_output_tokens
        if self.limits.max_tokens is None:
            return out
        remaining = max(1, int(self.limits.max_tokens - self.tokens))
        if out is None:
            return remaining if remaining < SDK_DEFAULT_OUTPUT else None
        return min(out, remaining)


def call_signature(name: str, args: dict[str, Any]) -> str:
    return name + "\x00" + canonical_json(args)


class Guards:
    """Refuses a call that keeps failing the same way, and notices identical turns."""

    def __init__(self, stuck_repeats: int) -> None:
        self.stuck_repeats = stuck_repeats
        self._failures: dict[str, tuple[str, int]] = {}
        self._turns: list[str] = []
        self.nudged = False

    def refused(self, name: str, args: dict[str, Any]) -> str | None:
        if not self._failures:  # nothing failed yet: no signature to compute (the common turn)
            return None
        seen = self._failures.get(call_signature(name, args))
        if seen is not None and seen[1] >= FAILURE_REPEATS:
            return (
                f"refused: this exact call to {name} failed {seen[1]} times in a row with the same error "
                f"({seen[0][:200]}); change the arguments or try another approach"
            )
        return None

    def record_call(self, name: str, args: dict[str, Any], error: str | None) -> None:
        if error is None and not self._failures:
            return
        sig = call_signature(name, args)
        if error is None:
            self._failures.pop(sig, None)
            return
        last = self._failures.get(sig)
        self._failures[sig] = (error, last[1] + 1 if last and last[0] == error else 1)

    def record_turn(
        self, text: str, calls: list[tuple[str, dict[str, Any]]], results: list[str]
    ) -> str | None:
        """'nudge' or 'stuck' when the last stuckRepeats turns were identical, else None."""
        if self.stuck_repeats <= 0:
            return None
        blob = json.dumps([text, [call_signature(n, a) for n, a in calls], results], default=str)
        self._turns.append(hashlib.sha256(blob.encode()).hexdigest())
        tail = self._turns[-self.stuck_repeats :]
        if len(tail) < self.stuck_repeats or len(set(tail)) != 1:
            return None
        if not self.nudged:
            self.nudged = True
            self._turns.clear()
            return "nudge"
        return "stuck"
