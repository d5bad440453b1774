"""Datasets from real runs: recorded runs turned into scenario files, in bulk.

A dataset is a folder of scenario files (keep it in the bundle's ``x-agen/evals`` to version it
with the bundle). Each run becomes one scenario: its input, its tool results as mocks (a call
answers only with the result recorded for the same tool and arguments), and the checks the
caller gives. The model is the bundle's own by default (what the agent does *now* with the
same input), or the run's cassette. Scenarios are deduplicated by input, against the folder too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agen.bundle.scenario import Expect
from agen.bundle.scenario_checks import Check
from agen.errors import InvalidError
from agen.evals.replay import ModelSource, plan
from agen.wire.evals import GetReplaySourceResponse
from agen.wire.feedback import Feedback

_TERM = re.compile(r"^\s*(?:(score)\s*(<=|>=|==|<|>|=)\s*(-?\d+(?:\.\d+)?)|(by)\s*=\s*(\S+))\s*$")


@dataclass
class FeedbackFilter:
    """``score<0``, ``score>=0.5``, ``by=reviewer``, joined by commas (all must hold)."""

    terms: list[tuple[str, str, str]]

    @classmethod
    def parse(cls, text: str) -> FeedbackFilter:
        terms = []
        for part in text.split(","):
            m = _TERM.match(part)
            if m is None:
                raise InvalidError(
                    f"--from-feedback {text!r}: {part.strip()!r} is not a filter; use score<0, "
                    "score>=0.5, by=reviewer (joined by commas)",
                    field="--from-feedback",
                )
            terms.append(("score", m[2], m[3]) if m[1] else ("by", "=", m[5]))
        return cls(terms)

    def matches(self, f: Feedback) -> bool:
        for key, op, value in self.terms:
            if key == "by" and (f.by or "") != value:
                return False
            if key == "score":
                v, s = float(value), f.score
                ok = {
                    "<": s < v,
                    "<=": s <= v,
                    ">": s > v,
                    ">=": s >= v,
                    "=": s == v,
                    "==": s == v,
                }[op]
                if not ok:
                    return False
        return True


def input_key(data: dict[str, Any]) -> str:
    """What two scenarios share when they ask the same: the input, or every turn's input."""
    if isinstance(data.get("turns"), list):
        return json.dumps([t.get("input") for t in data["turns"] if isinstance(t, dict)])
    return json.dumps([data.get("input")])


def existing_keys(folder: Path) -> set[str]:
    keys: set[str] = set()
    for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            keys.add(input_key(data))
    return keys


def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:40].rstrip("-") or "run"


def scenario_of(
    src: GetReplaySourceResponse,
    model: ModelSource,
    checks: list[Check],
    why: str,
) -> dict[str, Any]:
    """The run as a scenario file's JSON: input, mocks, model, the given checks, where it came from."""
    p = plan(src, model)
    s = p.scenario.model_copy(
        update={
            "name": f"{_slug(src.run.input or '')}-{src.run.id[-6:].lower()}",
            "description": f"from run {src.run.id} of {src.run.deployment}: {why}",
            "expect": Expect(status="done") if not checks else Expect(),
            "checks": checks,
        }
    )
    data = s.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
    data["name"], data["input"] = s.name, s.input
    return data
