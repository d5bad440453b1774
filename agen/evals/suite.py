"""Run every scenario K times (bounded concurrency) and score pass@k and pass^k.

pass@k: at least one of the K runs passed. pass^k: all K passed. A bundle's bar
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
from agen.evals.engine import Attempt, run_once
from agen.evals.scenario import Scenario


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.name,
            "runs": len(self.attempts),
            "passed": self.passes,
            "passAtK": self.pass_at_k,
            "passHatK": self.pass_hat_k,
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
    def all_passed(self) -> bool:
        return all(s.pass_hat_k for s in self.scores)

    def to_dict(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "digest": self.digest,
            "runs": self.runs,
            "passRate": self.pass_rate,
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
) -> Report:
    """Each scenario ``runs`` times, at most ``parallel`` at once, in one scratch store removed after."""
    from agen.store import open_store

    gate = asyncio.Semaphore(max(1, parallel))
    with tempfile.TemporaryDirectory(prefix="agen-eval-") as scratch:
        store = await open_store(str(Path(scratch) / "eval.db"))
        try:

            async def one(s: Scenario, i: int) -> Attempt:
                async with gate:
                    a = await run_once(store, bundle, s, i)
                if on_done is not None:
                    on_done(a)
                return a

            attempts = await asyncio.gather(*(one(s, i) for s in scenarios for i in range(runs)))
        finally:
            await store.close()
    scores = {s.name: ScenarioScore(s.name) for s in scenarios}
    for a in attempts:
        scores[a.scenario].attempts.append(a)
    return Report(bundle.name, bundle.digest, runs, list(scores.values()))
