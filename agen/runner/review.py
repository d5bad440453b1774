"""The reviewer: grades a finished result against the bundle's outcome rubric (seed 003 "Outcome
Evaluation", seed 001's executor/reviewer split).

After the executor ends with status done, one model call (the harness's provider, ``review.model``
or the harness model) answers a fixed JSON shape: satisfied, grade, feedback. Not satisfied and
rounds left: the feedback becomes a user message and the executor goes on in the same run. The
reviewer's answer is stored as an assistant message named ``reviewer`` (so transcripts, traces,
usage and the fake provider's script position count it) that the executor's context leaves out;
the feedback message is named ``review``, which is also how a resumed run counts its rounds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from agen.bundle.config import Review
from agen.domain import Outcome, OutcomeStatus
from agen.runner.context import Msg
from agen.runner.providers import Account
from agen.runner.providers.base import ModelRequest, ToolCallOut
from agen.runner.state import RunState
from agen.runner.turn import TurnFailed, TurnPolicy, model_turn
from agen.store.base import Store, loads, now_ms

REVIEWER = "reviewer"  # messages.name of the reviewer's answers
FEEDBACK = "review"  # messages.name of the user message that hands a review to the executor
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


@dataclass
class Step:
    """What a review decided: ``outcome`` ends the run; None means the executor revises."""

    outcome: Outcome | None


def is_reviewer(m: Msg) -> bool:
    return m.role == "assistant" and m.name == REVIEWER


def rounds_done(current: list[Msg]) -> int:
    """Reviews already handed back to the executor in this run (read back on resume)."""
    return sum(1 for m in current if m.role == "user" and m.name == FEEDBACK)


def since_last_review(current: list[Msg]) -> list[Msg]:
    """The messages of the round under way: a finish accepted before a review is not the result."""
    last = max(
        (i for i, m in enumerate(current) if m.role == "user" and m.name == FEEDBACK), default=-1
    )
    return current[last + 1 :]


def parse_verdict(text: str, calls: list[ToolCallOut] | None = None) -> Verdict | None:
    """The reviewer's answer: a JSON object in the text (fenced or not, prose around it) or a tool
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


def _record(st: RunState, outcome: Outcome) -> str:
    """What the reviewer sees: the task, this round's tool calls (short) and the result."""
    lines: list[str] = []
    results = {m.tool_call_id: m for m in st.ctx.current if m.role == "tool"}
    calls = [
        c
        for m in since_last_review(st.ctx.current)
        if m.role == "assistant"
        for c in m.tool_calls or []
    ]
    for c in calls[-RECORD_CALLS:]:
        res = results.get(c["id"])
        out = (res.content or "") if res is not None else "(no result)"
        if len(out) > RECORD_CHARS:
            out = out[:RECORD_CHARS] + f"… ({len(out)} characters)"
        args = json.dumps(c.get("arguments") or {}, ensure_ascii=False)[:RECORD_CHARS]
        lines.append(
            f"- {c['name']}({args}) → {'ERROR: ' if res is not None and res.is_error else ''}{out}"
        )
    parts = [f"## Task\n\n{st.req.input}"]
    if lines:
        parts.append(
            f"## What the executor did this round ({len(calls)} tool calls)\n\n" + "\n".join(lines)
        )
    result = outcome.summary or "(no summary)"
    if outcome.data is not None:
        result += "\n\nData:\n" + json.dumps(outcome.data, ensure_ascii=False, indent=2)
    parts.append(f"## Result\n\n{result}")
    return "\n\n".join(parts)


async def spent_usd(store: Store, run_id: str) -> float:
    """What this run's reviews cost so far (earlier rounds are checkpointed before the next review)."""
    rows = await store.all(
        "SELECT usage FROM messages WHERE run_id = ? AND role = 'assistant' AND name = ?",
        (run_id, REVIEWER),
    )
    return sum(float((loads(r["usage"], {}) or {}).get("cost_usd") or 0.0) for r in rows)


async def review(
    st: RunState,
    outcome: Outcome,
    spec: Review,
    accounts: list[Account],
    policy: TurnPolicy,
    temperature: float | None,
    store: Store,
) -> Step:
    """One review round: grade ``outcome``, record the call, and end the run or send it back."""
    n = rounds_done(st.ctx.current) + 1
    if spec.max_usd is not None and (spent := await spent_usd(store, st.run_id)) >= spec.max_usd:
        info = {
            "rounds": n - 1,
            "result": "budget_reached",
            "satisfied": None,
            "grade": None,
            "feedback": f"the reviews spent ${spent:.4f} of review.maxUsd ${spec.max_usd:.4f}; "
            "this result was not reviewed",
        }
        return Step(
            outcome.model_copy(
                update={"status": OutcomeStatus.PARTIAL, "reason": "review_budget", "review": info}
            )
        )
    system = INSTRUCTIONS + f"\n\n## Rubric\n\n{spec.rubric}"
    if spec.description:
        system += f"\n\n## The outcome wanted\n\n{spec.description}"
    if spec.model:
        accounts = [replace(accounts[0], models=[spec.model])]
    request = ModelRequest(
        model="",
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": _record(st, outcome)},
        ],
        max_tokens=spec.max_tokens,
        temperature=temperature,
        run_id=st.run_id,
        run_turn=st.turn,
    )
    t0 = now_ms()
    await st.emit({"type": "review_started", "turn": st.turn, "round": n})
    try:
        answer = await model_turn(accounts, request, policy)
    except TurnFailed as e:
        _spans(st, e.spans, n)
        info = {
            "rounds": n,
            "result": "error",
            "satisfied": None,
            "grade": None,
            "feedback": e.message,
        }
        st.add_span("agen.review", "error", {"agen.review.round": n}, t0, now_ms(), e.message)
        return Step(
            outcome.model_copy(
                update={"status": OutcomeStatus.PARTIAL, "reason": "review_failed", "review": info}
            )
        )
    _spans(st, answer.spans, n)
    resp = answer.response
    st.turn += 1
    st.budget.turns = st.turn
    model = resp.model or answer.model_sent
    st.add_usage(answer.account.label, model, resp.usage)
    st.add_message(
        "assistant", resp.text, name=REVIEWER, model=model, usage=resp.usage, raw=resp.raw
    )
    verdict = parse_verdict(resp.text, resp.tool_calls) or Verdict(
        False,
        None,
        "[agen] The reviewer's answer was not the JSON verdict asked for; its text follows.\n\n"
        + resp.text,
    )
    last = n > spec.max_iterations
    result = (
        "satisfied" if verdict.satisfied else "max_iterations_reached" if last else "needs_revision"
    )
    attrs = {
        "agen.review.round": n,
        "agen.review.result": result,
        "agen.review.satisfied": verdict.satisfied,
        "gen_ai.request.model": model,
    }
    if verdict.grade is not None:
        attrs["agen.review.grade"] = verdict.grade
    st.add_span("agen.review", "ok", attrs, t0, now_ms())
    await st.emit(
        {
            "type": "review",
            "turn": st.turn,
            "round": n,
            "result": result,
            "satisfied": verdict.satisfied,
            "grade": verdict.grade,
            "feedback": verdict.feedback,
        }
    )
    info = {
        "rounds": n,
        "result": result,
        "satisfied": verdict.satisfied,
        "grade": verdict.grade,
        "feedback": verdict.feedback,
    }
    if verdict.satisfied:
        return Step(outcome.model_copy(update={"review": info}))
    if last:
        return Step(
            outcome.model_copy(
                update={
                    "status": OutcomeStatus.PARTIAL,
                    "reason": "max_iterations_reached",
                    "review": info,
                }
            )
        )
    grade = f" (grade {verdict.grade:.2f})" if verdict.grade is not None else ""
    st.add_message(
        "user",
        f"[agen] Review {n} of your result{grade}: the rubric is not met yet. Revise your work "
        f"and finish again.\n\n{verdict.feedback}",
        name=FEEDBACK,
    )
    return Step(None)


def _spans(st: RunState, spans: list[Any], n: int) -> None:
    for s in spans:
        st.add_span(
            "gen_ai.chat",
            s.status,
            {**s.attrs, "agen.turn": st.turn + 1, "agen.role": REVIEWER, "agen.review.round": n},
            s.started_ms,
            s.ended_ms,
            s.error,
        )
