"""The reviewer loop: a declared rubric grades each finished result; a miss sends the executor back."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agen.errors import FencedError
from agen.runner.review import parse_verdict
from agen.runner.types import RunRequest
from tests.runner_helpers import FnTool, call, capturing_runner, make, open_store, runner, script

RUBRIC = "1. The answer names three colours\n2. Each colour is spelled in lower case"


def miss(grade: float, feedback: str) -> dict[str, Any]:
    return {"text": json.dumps({"satisfied": False, "grade": grade, "feedback": feedback})}


def review_config(max_iterations: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "review": {"rubric": RUBRIC, "maxIterations": max_iterations, "maxTokens": 200, **extra}
    }


async def test_a_result_that_misses_the_rubric_is_revised_and_the_second_round_is_graded(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    b = make(
        script(
            {"text": "red, Blue"},
            miss(0.4, "only two colours; Blue is capitalised"),
            {"text": "red, blue, green"},
            {"text": 'Verdict:\n```json\n{"satisfied": true, "grade": 0.95, "feedback": ""}\n```'},
        ),
        review_config(),
    )
    r, cap = await capturing_runner(store, b)
    res = await r.run(RunRequest(input="name three colours", task_id="t-1"))

    assert res.outcome.status == "done" and res.outcome.summary == "red, blue, green"
    assert res.outcome.review == {
        "rounds": 2,
        "result": "satisfied",
        "satisfied": True,
        "grade": 0.95,
        "feedback": "",
    }
    reviewer_asks = [q for q in cap.requests if "## Rubric" in q.messages[0]["content"]]
    assert len(reviewer_asks) == 2 and reviewer_asks[0].max_tokens == 200
    assert (
        RUBRIC in reviewer_asks[0].messages[0]["content"]
        and "red, Blue" in reviewer_asks[0].messages[1]["content"]
    )
    second = cap.requests[
        2
    ]  # the executor's revision sees the feedback, never the reviewer's own answer
    assert (
        "Blue is capitalised" in second.messages[-1]["content"]
        and second.messages[-1]["role"] == "user"
    )
    assert not any('"satisfied"' in str(m.get("content")) for m in second.messages)

    msgs = await store.all(
        "SELECT role, name FROM messages WHERE run_id = ? ORDER BY seq", (res.run_id,)
    )
    assert [(m["role"], m["name"]) for m in msgs] == [
        ("user", None),
        ("assistant", None),
        ("assistant", "reviewer"),
        ("user", "review"),
        ("assistant", None),
        ("assistant", "reviewer"),
    ]
    spans = await store.all(
        "SELECT name, attrs FROM spans WHERE run_id = ? ORDER BY started_ms", (res.run_id,)
    )
    reviews = [json.loads(s["attrs"]) for s in spans if s["name"] == "agen.review"]
    assert [a["agen.review.result"] for a in reviews] == ["needs_revision", "satisfied"]
    chats = [json.loads(s["attrs"]) for s in spans if s["name"] == "gen_ai.chat"]
    assert [a.get("agen.role") for a in chats] == [None, "reviewer", None, "reviewer"]
    run = await store.one(
        "SELECT turns, input_tokens, status FROM runs WHERE id = ?", (res.run_id,)
    )
    usage = await store.scalar(
        "SELECT SUM(input_tokens) FROM usage WHERE run_id = ?", (res.run_id,)
    )
    assert run is not None
    assert run["turns"] == 4 and run["status"] == "succeeded" and run["input_tokens"] == usage > 0
    await store.close()


async def test_the_review_stops_at_max_iterations_with_the_last_grade_and_status_partial(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    b = make(
        script(
            {"text": "v1"},
            miss(0.1, "no colours"),
            {"text": "v2"},
            miss(0.3, "one colour"),
            {"text": "v3"},
            miss(0.6, "two colours"),
            {"text": "never asked"},
        ),
        review_config(max_iterations=2),
    )
    r = runner(store, b)
    res = await r.run(RunRequest(input="name three colours", task_id="t-1"))

    assert res.status == "succeeded"
    assert res.outcome.status == "partial" and res.outcome.reason == "max_iterations_reached"
    assert res.outcome.summary == "v3"
    assert res.outcome.review == {
        "rounds": 3,
        "result": "max_iterations_reached",
        "satisfied": False,
        "grade": 0.6,
        "feedback": "two colours",
    }
    feedback = await store.all(
        "SELECT content FROM messages WHERE run_id = ? AND name = 'review' ORDER BY seq",
        (res.run_id,),
    )
    assert len(feedback) == 2 and "one colour" in feedback[1]["content"]
    task_outcome = json.loads(
        await store.scalar("SELECT outcome FROM runs WHERE id = ?", (res.run_id,))
    )
    assert task_outcome["review"]["rounds"] == 3
    await store.close()


async def test_a_finish_call_is_reviewed_and_a_run_resumed_between_rounds_does_not_take_the_old_result(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    started, release = asyncio.Event(), asyncio.Event()

    async def stuck(args: dict[str, Any]) -> str:
        started.set()
        await release.wait()
        return "looked"

    async def quick(args: dict[str, Any]) -> str:
        return "looked"

    b = make(
        script(
            call("finish", summary="v1"),
            miss(0.2, "look it up first"),
            call("lookup"),
            call("finish", summary="v2"),
            {"text": '{"satisfied": "yes", "grade": 0.9}'},
        ),
        review_config(max_iterations=1),
    )
    old = runner(store, b, FnTool("lookup", stuck, side_effect=True), owner="host-a")
    task = asyncio.create_task(old.run(RunRequest(input="find it", task_id="t-1")))
    await (
        started.wait()
    )  # round 1 is reviewed and checkpointed; the revision is under way when host-a "dies"

    new = runner(store, b, FnTool("lookup", quick, side_effect=True), owner="host-b")
    res = await new.run(RunRequest(input="find it", task_id="t-1", attempt=2))
    assert res.resumed and res.outcome.status == "done" and res.outcome.summary == "v2"
    assert res.outcome.review is not None and res.outcome.review["rounds"] == 2
    assert res.outcome.review["result"] == "satisfied"
    release.set()
    with pytest.raises(FencedError):
        await task
    await store.close()


async def test_a_bundle_without_review_ends_on_the_first_answer(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    res = await runner(store, make(script({"text": "hi"}, miss(0.0, "x")))).run(
        RunRequest(input="x")
    )
    assert res.outcome.status == "done" and res.outcome.review is None
    await store.close()


@pytest.mark.parametrize(
    ("text", "satisfied", "grade"),
    [
        ('{"satisfied": false, "grade": 0.5, "feedback": "f"}', False, 0.5),
        (
            'Here you go: {"verdict": "needs_revision", "grade": "7", "feedback": "f"} thanks',
            False,
            0.7,
        ),
        ('```json\n{"result": "satisfied", "score": 85}\n```', True, 0.85),
        ('{"satisfied": true, "grade": "A+"}', True, None),
    ],
)
def test_the_reviewer_answer_is_read_from_json_in_any_wrapping(
    text: str, satisfied: bool, grade: float | None
) -> None:
    v = parse_verdict(text)
    assert v is not None and v.satisfied is satisfied and v.grade == grade


def test_an_answer_without_a_verdict_is_not_read_as_one() -> None:
    assert parse_verdict("Looks good to me!") is None
    assert parse_verdict('{"grade": 1.0}') is None


async def test_the_reviewer_runs_on_its_own_model_and_its_call_is_recorded_as_the_reviewer(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    b = make(
        script({"text": "red, green, blue"}, {"text": '{"satisfied": true, "grade": 1}'}),
        review_config(model="judge-model"),
    )
    r, cap = await capturing_runner(store, b)
    res = await r.run(RunRequest(input="name three colours", task_id="t-1"))
    assert [q.model for q in cap.requests] == ["fake", "judge-model"]
    rows = await store.all(
        "SELECT name, model FROM messages WHERE run_id = ? AND role = 'assistant' ORDER BY seq",
        (res.run_id,),
    )
    assert [(m["name"], m["model"]) for m in rows] == [(None, "fake"), ("reviewer", "judge-model")]
    assert res.outcome.review is not None and res.outcome.review["grade"] == 1.0
    await store.close()


async def test_a_reviewer_answer_that_is_not_a_verdict_counts_as_a_miss_and_its_text_is_the_feedback(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    b = make(
        script({"text": "red"}, {"text": "Needs more colours."}), review_config(max_iterations=0)
    )
    res = await runner(store, b).run(RunRequest(input="name three colours", task_id="t-1"))
    assert res.outcome.status == "partial" and res.outcome.review is not None
    assert res.outcome.review["rounds"] == 1 and res.outcome.review["satisfied"] is False
    assert "Needs more colours." in res.outcome.review["feedback"]
    await store.close()


async def test_a_failed_review_call_keeps_the_result_as_partial_and_says_so(tmp_path: Path) -> None:
    from agen.runner.providers import build_accounts
    from agen.runner.providers.base import (
        DeltaSink,
        ModelProvider,
        ModelRequest,
        ModelResponse,
        ProviderError,
    )

    class NoReviewer(ModelProvider):
        name = "fake"
        default_model = "fake"

        def __init__(self, inner: ModelProvider) -> None:
            self.inner = inner

        async def complete(
            self, request: ModelRequest, on_delta: DeltaSink | None = None
        ) -> ModelResponse:
            if "## Rubric" in request.messages[0]["content"]:
                raise ProviderError("other", "the reviewer model does not exist", status=404)
            return await self.inner.complete(request, on_delta)

    store = await open_store(tmp_path)
    b = make(script({"text": "red, green, blue"}), review_config())
    accounts = await build_accounts(b)
    accounts[0].provider = NoReviewer(accounts[0].provider)
    res = await runner(store, b, accounts=accounts).run(
        RunRequest(input="name three colours", task_id="t-1")
    )
    assert res.outcome.status == "partial" and res.outcome.reason == "review_failed"
    assert res.outcome.summary == "red, green, blue"
    assert res.outcome.review is not None and res.outcome.review["result"] == "error"
    assert "does not exist" in res.outcome.review["feedback"]
    await store.close()


async def test_reviews_stop_when_their_usd_budget_is_spent_and_the_result_ends_unreviewed(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    paid = {"inputTokens": 100, "outputTokens": 10, "costUsd": 0.03}
    b = make(
        script(
            {"text": "v1"},
            {**miss(0.2, "more"), "usage": paid},
            {"text": "v2"},
            {**miss(0.4, "more still"), "usage": paid},
            {"text": "v3"},
            {"text": "never asked"},
        ),
        review_config(max_iterations=5, maxUsd=0.05),
    )
    res = await runner(store, b).run(RunRequest(input="x", task_id="t-1"))
    assert res.outcome.status == "partial" and res.outcome.reason == "review_budget"
    assert res.outcome.summary == "v3"
    assert res.outcome.review is not None and res.outcome.review["rounds"] == 2
    assert res.outcome.review["result"] == "budget_reached"
    cost = await store.scalar("SELECT cost_usd FROM runs WHERE id = ?", (res.run_id,))
    assert cost == pytest.approx(0.06)
    await store.close()
