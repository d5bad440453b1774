"""Two evals side by side: per scenario, score, pass rate, cost and time in two columns with the
difference, regressions first.

A side is a live ``Report`` (a bundle folder evaluated now) or a recorded eval read back
(GetEvalRuns), both reduced to the same per-scenario figures. A scenario *regressed* when it
passed every run on A and not on B, and was *fixed* the other way round; otherwise a lower
score on B is a *worse* line, a higher one *better*.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from agen.evals.suite import Report
from agen.wire.evals import EvalRunOut, GetEvalRunsResponse

Change = Literal["regressed", "fixed", "worse", "better", "same", "new", "gone"]
ORDER: dict[str, int] = {
    "regressed": 0,
    "worse": 1,
    "gone": 2,
    "fixed": 3,
    "better": 4,
    "new": 5,
    "same": 6,
}
EPSILON = 1e-9


@dataclass
class Figures:
    """One scenario on one side: its runs reduced to means."""

    runs: int
    passed: int
    score: float
    cost_usd: float
    duration_ms: float
    tokens: float

    @property
    def pass_rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0

    @property
    def pass_hat_k(self) -> bool:
        return self.runs > 0 and self.passed == self.runs


@dataclass
class Side:
    label: str  # what the user named: a folder, a digest, an eval id
    bundle: str
    digest: str
    scenarios: dict[str, Figures] = field(default_factory=dict)

    @property
    def pass_rate(self) -> float:
        s = list(self.scenarios.values())
        return sum(f.pass_hat_k for f in s) / len(s) if s else 0.0

    @property
    def score(self) -> float:
        s = list(self.scenarios.values())
        return sum(f.score for f in s) / len(s) if s else 0.0


def _mean(values: Iterable[float]) -> float:
    v = list(values)
    return sum(v) / len(v) if v else 0.0


def side_of_report(label: str, report: Report) -> Side:
    return Side(
        label,
        report.bundle,
        report.digest,
        {
            s.name: Figures(
                len(s.attempts),
                s.passes,
                s.score,
                s.mean_cost_usd,
                s.mean_duration_ms,
                s.mean_tokens,
            )
            for s in report.scores
        },
    )


def side_of_recorded(label: str, rec: GetEvalRunsResponse) -> Side:
    by: dict[str, list[EvalRunOut]] = {}
    for r in rec.runs:
        by.setdefault(r.scenario, []).append(r)
    return Side(
        label,
        rec.bundle,
        rec.digest,
        {
            name: Figures(
                len(runs),
                sum(r.passed for r in runs),
                _mean(r.score for r in runs),
                _mean(r.cost_usd for r in runs),
                _mean(float(r.duration_ms) for r in runs),
                _mean(float(r.input_tokens + r.output_tokens) for r in runs),
            )
            for name, runs in by.items()
        },
    )


@dataclass
class Row:
    scenario: str
    a: Figures | None
    b: Figures | None
    change: Change

    @property
    def score_delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b.score - self.a.score

    def to_dict(self) -> dict[str, Any]:
        def figs(f: Figures | None) -> dict[str, Any] | None:
            if f is None:
                return None
            return {
                "runs": f.runs,
                "passed": f.passed,
                "passRate": round(f.pass_rate, 4),
                "score": round(f.score, 4),
                "meanCostUsd": round(f.cost_usd, 6),
                "meanDurationMs": round(f.duration_ms, 1),
                "meanTokens": round(f.tokens, 1),
            }

        d = self.score_delta
        return {
            "scenario": self.scenario,
            "change": self.change,
            "a": figs(self.a),
            "b": figs(self.b),
            "scoreDelta": None if d is None else round(d, 4),
        }


def _change(a: Figures | None, b: Figures | None) -> Change:
    if a is None:
        return "new"
    if b is None:
        return "gone"
    if a.pass_hat_k and not b.pass_hat_k:
        return "regressed"
    if b.pass_hat_k and not a.pass_hat_k:
        return "fixed"
    if b.score < a.score - EPSILON:
        return "worse"
    if b.score > a.score + EPSILON:
        return "better"
    return "same"


def compare(a: Side, b: Side) -> list[Row]:
    """Every scenario of either side, regressions first, then by the score's drop (largest first)."""
    names = list(dict.fromkeys([*a.scenarios, *b.scenarios]))
    rows = [Row(n, a.scenarios.get(n), b.scenarios.get(n), "same") for n in names]
    for r in rows:
        r.change = _change(r.a, r.b)
    return sorted(rows, key=lambda r: (ORDER[r.change], r.score_delta or 0.0, r.scenario))


def flips(rows: list[Row]) -> list[str]:
    """The lines ``deploy --require-eval`` prints: only scenarios whose pass^k flipped (seed 002)."""
    out = []
    for r in rows:
        if r.change == "regressed":
            out.append(f"regressed: {r.scenario} now fails (passed last eval)")
        elif r.change == "fixed":
            out.append(f"fixed: {r.scenario} now passes (failed last eval)")
    return out
