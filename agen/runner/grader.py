"""The grader: one model call that judges a result against a rubric (0.0-1.0, satisfied, feedback).

Two callers, one implementation: the runtime reviewer (agen/runner/review.py, seed 003 "Outcome
Evaluation") grades a finished run before it ends, and the eval ``rubric`` check (agen/evals)
grades a scenario's result offline. Both show the judge the same record (the task, the tool
calls, the result) and read its answer with the same parser, so a rubric means the same thing
in a scenario as in production.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from agen.runner.providers import Account
from agen.runner.providers.base import ModelRequest, ToolCallOut
from agen.runner.turn import TurnAnswer, TurnPolicy, model_turn

RECORD_CALLS = 20
RECORD_CHARS = 500

INSTRUCTIONS = (
    "You are the reviewer. Another agent (the executor) worked on the task below; judge whether its result "
    "meets the rubric, from what the record says it did. Answer with only a JSON object, no other text:\n"
    '{"satisfied": true or false, "grade": a number from 0.0 (misses everything) to 1.0 (meets every point), '
    '"feedback": "what is missing or wrong, point by point, so the executor can fix it; empty when satisfied"}'
)


@dataclass
class Verdict:
    satisfied: bool
    grade: float | None
    feedback: str

    @property
    def score(self) -> float:
        """The grade, or (a judge that gave none) 1.0 when satisfied, else 0.0."""
        if self.grade is not None:
            return self.grade
        return 1.0 if self.satisfied else 0.0


@dataclass
class RecordedCall:
    """One tool call as the judge sees it: name, arguments, result (None: no result)."""

    name: str
    arguments: dict[str, Any]
    result: str | None
    is_error: bool = False


@dataclass
class Graded:
    """The judge's verdict and the model call that gave it (for usage, spans and the transcript)."""

    verdict: Verdict
    answer: TurnAnswer
    parsed: bool  # False: the answer was not the JSON asked for (the verdict says so)


def parse_verdict(text: str, calls: list[ToolCallOut] | None = None) -> Verdict | None:
    """The judge's answer: a JSON object in the text (fenced or not, prose around it) or a tool
    call's arguments. ``satisfied`` may also be given as ``verdict``/``result`` ("satisfied" or
    "needs_revision", seed 003). None when no object with a readable ``satisfied`` is found."""
    candidates: list[Any] = [c.arguments for c in calls or []]
    dec = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        try:
            obj, _ = dec.raw_decode(text, i)
            candidates.append(obj)
        except ValueError:
            pass
        i = text.find("{", i + 1)
    for obj in candidates:
        if isinstance(obj, dict):
            verdict = _verdict(obj)
            if verdict is not None:
                return verdict
    return None


def _verdict(obj: dict[str, Any]) -> Verdict | None:
    raw = obj.get("satisfied", obj.get("verdict", obj.get("result")))
    if isinstance(raw, str):
        word = raw.strip().lower()
        satisfied = word in ("true", "yes", "satisfied", "pass", "passed")
        if not satisfied and word not in (
            "false",
            "no",
            "needs_revision",
            "not_satisfied",
            "fail",
            "failed",
        ):
            return None
    elif isinstance(raw, bool):
        satisfied = raw
    else:
        return None
    grade: float | None = None
    g = obj.get("grade", obj.get("score"))
    try:
        grade = None if g is None or isinstance(g, bool) else float(g)
    except (TypeError, ValueError):
        grade = None
    if (
        grade is not None and grade > 1.0 and grade <= 100.0
    ):  # "85" or "8.5"-style grades: scale to 0..1
        grade = grade / (10.0 if grade <= 10.0 else 100.0)
    if grade is not None and not 0.0 <= grade <= 1.0:
        grade = None
    fb = obj.get("feedback", obj.get("explanation", ""))
    return Verdict(
        satisfied, grade, fb if isinstance(fb, str) else json.dumps(fb, ensure_ascii=False)
    )


def record_text(task: str, calls: list[RecordedCall], summary: str, data: Any) -> str:
    """What the judge sees: the task, the last tool calls (each cut short) and the result."""
    lines: list[str] = []
    for c in calls[-RECORD_CALLS:]:
        out = c.result if c.result is not None else "(no result)"
        if len(out) > RECORD_CHARS:
            out = out[:RECORD_CHARS] + f"… ({len(out)} characters)"
        args = json.dumps(c.arguments or {}, ensure_ascii=False)[:RECORD_CHARS]
        lines.append(f"- {c.name}({args}) → {'ERROR: ' if c.is_error else ''}{out}")
    parts = [f"## Task\n\n{task}"]
    if lines:
        parts.append(
            f"## What the executor did this round ({len(calls)} tool calls)\n\n" + "\n".join(lines)
        )
    result = summary or "(no summary)"
    if data is not None:
        result += "\n\nData:\n" + json.dumps(data, ensure_ascii=False, indent=2)
    parts.append(f"## Result\n\n{result}")
    return "\n\n".join(parts)


async def grade(
    accounts: list[Account],
    policy: TurnPolicy,
    *,
    rubric: str,
    record: str,
    description: str | None = None,
    model: str | None = None,
    max_tokens: int = 1024,
    temperature: float | None = None,
    run_id: str = "",
    run_turn: int = 0,
) -> Graded:
    """Ask the judge (``accounts``, ``model`` on the first one if named) once. Raises TurnFailed
    when no model answered; an answer that is not the JSON verdict grades as not satisfied."""
    system = INSTRUCTIONS + f"\n\n## Rubric\n\n{rubric}"
    if description:
        system += f"\n\n## The outcome wanted\n\n{description}"
    if model:
        accounts = [replace(accounts[0], models=[model])]
    request = ModelRequest(
        model="",
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": record},
        ],
        max_tokens=max_tokens,
        temperature=temperature,
        run_id=run_id,
        run_turn=run_turn,
    )
    answer = await model_turn(accounts, request, policy)
    resp = answer.response
    verdict = parse_verdict(resp.text, resp.tool_calls)
    if verdict is not None:
        return Graded(verdict, answer, True)
    return Graded(
        Verdict(
            False,
            None,
            "[agen] The reviewer's answer was not the JSON verdict asked for; its text follows.\n\n"
            + resp.text,
        ),
        answer,
        False,
    )
