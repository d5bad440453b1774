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

from dataclasses import dataclass
from typing import Any, NamedTuple

from agen.bundle.config import Review
from agen.domain import Outcome, OutcomeStatus
from agen.runner.context import Msg
from agen.runner.grader import RecordedCall, grade, record_text
from agen.runner.grader import parse_verdict as parse_verdict
from agen.runner.providers import Account
from agen.runner.state import RunState
from agen.runner.turn import TurnFailed, TurnPolicy
from agen.store.base import Store, loads, now_ms

REVIEWER = "reviewer"  # messages.name of the reviewer's answers
FEEDBACK = "review"  # messages.name of the user message that hands a review to the executor


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


def _record(st: RunState, outcome: Outcome) -> str:
    """What the reviewer sees: the task, this round's tool calls (short) and the result."""
    results = {m.tool_call_id: m for m in st.ctx.current if m.role == "tool"}
    calls: list[RecordedCall] = []
    for m in since_last_review(st.ctx.current):
        for c in (m.tool_calls or []) if m.role == "assistant" else []:
            res = results.get(c["id"])
            calls.append(
                RecordedCall(
                    c["name"],
                    c.get("arguments") or {},
                    (res.content or "") if res is not None else None,
                    res is not None and res.is_error,
                )
            )
    return record_text(st.req.input, calls, outcome.summary or "", outcome.data)


class _Usage(NamedTuple):
    usage: str | None  # JSON text


async def spent_usd(store: Store, run_id: str) -> float:
    """What this run's reviews cost so far (earlier rounds are checkpointed before the next review)."""
    rows = await store.rows(
        _Usage,
        "SELECT usage FROM messages WHERE run_id = ? AND role = 'assistant' AND name = ?",
        (run_id, REVIEWER),
    )
    return sum(float((loads(r.usage, {}) or {}).get("cost_usd") or 0.0) for r in rows)


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
    t0 = now_ms()
    await st.emit({"type": "review_started", "turn": st.turn, "round": n})
    try:
        graded = await grade(
            accounts,
            policy,
            rubric=spec.rubric,
            description=spec.description,
            record=_record(st, outcome),
            model=spec.model,
            max_tokens=spec.max_tokens,
            temperature=temperature,
            run_id=st.run_id,
            run_turn=st.turn,
        )
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
    answer, verdict = graded.answer, graded.verdict
    _spans(st, answer.spans, n)
    resp = answer.response
    st.turn += 1
    st.budget.turns = st.turn
    model = resp.model or answer.model_sent
    st.add_usage(answer.account.label, model, resp.usage)
    st.add_message(
        "assistant", resp.text, name=REVIEWER, model=model, usage=resp.usage, raw=resp.raw
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
    st.add_feedback(
        REVIEWER,
        verdict.score,
        verdict.feedback or None,
        {"round": str(n), "result": result},
    )
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
    shown = f" (grade {verdict.grade:.2f})" if verdict.grade is not None else ""
    st.add_message(
        "user",
        f"[agen] Review {n} of your result{shown}: the rubric is not met yet. Revise your work "
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
