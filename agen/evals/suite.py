"""Run every scenario K times (bounded concurrency): scores, pass@k and pass^k, cost and time.

pass@k: at least one of the K runs passed. pass^k: all K passed. A scenario's score is the mean
of its runs' scores (each the weighted mean of its checks). A bundle's bar
(``x-agen/config.json`` ``eval.minPassRate``, default 1.0) is the share of scenarios that must
pass^k for ``agen deploy --require-eval``.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agen.bundle import Bundle
from agen.bundle.scenario import Scenario
from agen.evals.engine import Attempt, run_once
from agen.evals.grading import Judge


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass
class ScenarioScore:
    name: str
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def passes(self) -> int:
        return sum(a.passed for a in self.attempts)

    @property
    def pass_at_k(self) -> bool:
        return self.passes > 0

    @property
    def pass_hat_k(self) -> bool:
        return self.passes == len(self.attempts)

    @property
    def pass_rate(self) -> float:
        return self.passes / len(self.attempts) if self.attempts else 0.0

    @property
    def score(self) -> float:
        return _mean([a.score for a in self.attempts])

    @property
    def mean_tokens(self) -> float:
        return _mean([float(a.tokens) for a in self.attempts])

    @property
    def mean_cost_usd(self) -> float:
        return _mean([a.cost_usd for a in self.attempts])

    @property
    def mean_duration_ms(self) -> float:
        return _mean([float(a.duration_ms) for a in self.attempts])

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.name,
            "runs": len(self.attempts),
            "passed": self.passes,
            "passRate": round(self.pass_rate, 4),
            "score": round(self.score, 4),
            "passAtK": self.pass_at_k,
            "passHatK": self.pass_hat_k,
            "meanTokens": round(self.mean_tokens, 1),
            "meanCostUsd": round(self.mean_cost_usd, 6),
            "meanDurationMs": round(self.mean_duration_ms, 1),
            "attempts": [a.to_dict() for a in self.attempts],
        }


@dataclass
class Report:
    bundle: str
    digest: str
    runs: int
    scores: list[ScenarioScore]

    @property
    def pass_rate(self) -> float:
        """The share of scenarios that passed every run (pass^k)."""
        return sum(s.pass_hat_k for s in self.scores) / len(self.scores) if self.scores else 1.0

    @property
    def score(self) -> float:
        return _mean([s.score for s in self.scores])

    @property
    def all_passed(self) -> bool:
        return all(s.pass_hat_k for s in self.scores)

    def to_dict(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "digest": self.digest,
            "runs": self.runs,
            "passRate": self.pass_rate,
            "score": round(self.score, 4),
            "allPassed": self.all_passed,
            "scenarios": [s.to_dict() for s in self.scores],
        }


async def run_suite(
    bundle: Bundle,
    scenarios: list[Scenario],
    runs: int,
    *,
    parallel: int = 4,
    on_done: Callable[[Attempt], None] | None = None,
    root: Path | None = None,
    store_url: str | None = None,
) -> Report:
    """Each scenario ``runs`` times, at most ``parallel`` at once, in ``store_url`` (kept) or a
    scratch SQLite store removed after. ``root``: where custom evaluators are imported from."""
    from agen.store import open_store

    gate = asyncio.Semaphore(max(1, parallel))
    judge = Judge(bundle)
    with tempfile.TemporaryDirectory(prefix="agen-eval-") as scratch:
        store = await open_store(store_url or str(Path(scratch) / "eval.db"))
        try:

            async def one(s: Scenario, i: int) -> Attempt:
                async with gate:
                    a = await run_once(store, bundle, s, i, judge=judge, root=root)
                if on_done is not None:
                    on_done(a)
                return a

            attempts = await asyncio.gather(*(one(s, i) for s in scenarios for i in range(runs)))
        finally:
            await store.close()
    scores = {s.name: ScenarioScore(s.name) for s in scenarios}
    for a in attempts:
        scores[a.scenario].attempts.append(a)
    for s in scores.values():
        s.attempts.sort(key=lambda a: a.run_index)
    return Report(bundle.name, bundle.digest, runs, list(scores.values()))
