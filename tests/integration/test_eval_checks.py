"""`agen eval` checks with scores: a rubric graded by a judge model (the local OpenAI-compatible
server), deterministic checks, a custom evaluator, multi-turn scenarios with signals."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agen.testing.openai_server import OpenAIServer, Reply
from tests.cli_helpers import run_agen
from tests.fleet_helpers import write_bundle
from tests.unit.test_eval_scenarios import _finish, _write_evals

REFUND = [
    {"toolCalls": [{"name": "shop.find", "arguments": {"order": 7}}]},
    {"toolCalls": [{"name": "shop.refund", "arguments": {"order": 7, "amount": 30}}]},
    _finish("Refunded order #7: $30 back to the card.", order=7, amount=30),
]
TOOLS = [
    {"name": "shop.find", "result": {"order": 7, "paid": 30}},
    {"name": "shop.refund", "result": {"ok": True}},
]


def _judged_bundle(root: Path, srv: OpenAIServer) -> Path:
    """The bundle's own provider is the local server: it is the judge of rubric checks."""
    bundle = _shop(root)
    (bundle / "x-agen" / "harness.json").write_text(
        json.dumps(
            {"provider": "openai", "model": "judge-1", "baseUrl": srv.base_url, "maxRetries": 0}
        )
    )
    return bundle


def _shop(root: Path) -> Path:
    return write_bundle(
        root / "shop", "shop", config={"kind": "pool", "permissions": {"default": "allow"}}
    )


def _scenario(name: str, checks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "input": "refund order 7",
        "tools": TOOLS,
        "model": {"provider": "fake", "script": REFUND},
        "checks": checks,
        **extra,
    }


def test_a_rubric_check_passes_at_threshold_0_7_and_fails_at_0_9_on_the_same_judged_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rubric = {"type": "rubric", "rubric": "names the order and the amount refunded"}
    verdict = '{"satisfied": true, "grade": 0.8, "feedback": "names the order; the amount is there but not the card"}'
    with OpenAIServer(default=Reply(text=verdict)) as srv:
        bundle = _judged_bundle(tmp_path, srv)
        _write_evals(
            bundle,
            [
                _scenario("lenient", [{**rubric, "threshold": 0.7}]),
                _scenario("strict", [{**rubric, "threshold": 0.9}]),
            ],
        )
        code, out, _ = run_agen(capsys, "eval", str(bundle), "--json")
        assert code == 1
        report = {s["scenario"]: s for s in json.loads(out)["scenarios"]}
        # the judge saw the rubric, the task, the calls with their mocked results, and the result
        assert len(srv.requests) == 2
        for req in srv.requests:
            system, user = req["messages"][0]["content"], req["messages"][1]["content"]
            assert "names the order and the amount refunded" in system
            assert "refund order 7" in user and "Refunded order #7" in user
            assert 'shop_refund({"order": 7, "amount": 30}) → {"ok": true}' in user
    lenient, strict = report["lenient"], report["strict"]
    assert (lenient["passHatK"], strict["passHatK"]) == (True, False)
    assert lenient["score"] == strict["score"] == 0.8
    [check] = strict["attempts"][0]["checks"]
    assert check["check"] == "rubric" and check["passed"] is False and check["score"] == 0.8
    assert "grade 0.80 (threshold 0.9)" in check["reason"] and "not the card" in check["reason"]
    assert check["judge"]["model"] == "judge-1"
    assert strict["attempts"][0]["failures"] == [f"{check['name']}: {check['reason']}"]

    # the table: score, pass rate, tokens, cost and time per scenario
    with OpenAIServer(default=Reply(text=verdict)) as srv:
        (bundle / "x-agen" / "harness.json").write_text(
            json.dumps({"provider": "openai", "model": "judge-1", "baseUrl": srv.base_url})
        )
        code, out, _ = run_agen(capsys, "eval", str(bundle))
    assert code == 1
    assert "SCORE" in out and "TOKENS" in out and "COST" in out and "TIME" in out
    assert "lenient" in out and "0.80" in out and "mean score 0.80" in out


def test_deterministic_checks_score_each_and_name_what_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _shop(tmp_path)
    good: list[dict[str, Any]] = [
        {"type": "regex", "pattern": r"order #\d+"},
        {"type": "regex", "pattern": "sorry", "absent": True, "ignoreCase": True},
        {"type": "number", "path": "$.amount", "gte": 10, "lte": 30},
        {"type": "calledInOrder", "names": ["shop.find", "shop.refund"]},
        {"type": "called", "tool": "shop.refund", "args": {"order": 7}, "times": 1},
        {"type": "limits", "maxTokens": 100000, "maxTurns": 3},
    ]
    bad: list[dict[str, Any]] = [
        {"type": "regex", "pattern": "^Sorry", "name": "apologises"},
        {"type": "number", "path": "$.amount", "lt": 20},
        {"type": "calledInOrder", "names": ["shop.refund", "shop.find"]},
        {"type": "called", "tool": "shop.refund", "args": {"order": 8}},
        {"type": "limits", "maxTurns": 2, "weight": 2},
    ]
    _write_evals(bundle, [_scenario("good", good), _scenario("bad", bad)])
    code, out, _ = run_agen(capsys, "eval", str(bundle), "--json")
    assert code == 1
    report = {s["scenario"]: s for s in json.loads(out)["scenarios"]}
    assert report["good"]["score"] == 1.0 and report["good"]["passHatK"] is True
    attempt = report["bad"]["attempts"][0]
    assert attempt["score"] == 0.0 and [c["passed"] for c in attempt["checks"]] == [False] * 5
    assert attempt["failures"] == [
        "apologises: the summary does not match /^Sorry/: 'Refunded order #7: $30 back to the card.'",
        "number $.amount: $.amount is 30, not < 20",
        "calledInOrder shop.refund → shop.find: shop.find was not called after shop.refund"
        " (calls: shop_find, shop_refund, finish)",
        'called shop.refund: shop.refund was not called with {"order": 8}; its calls had'
        ' {"order": 7, "amount": 30}',
        "limits: took 3 model turns > 2",
    ]
    assert report["good"]["meanTokens"] > 0 and report["good"]["meanDurationMs"] >= 0


def test_a_bad_check_is_refused_naming_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _shop(tmp_path)
    folder = _write_evals(bundle, [_scenario("bad", [{"type": "number", "path": "$.x"}])])
    code, _, err = run_agen(capsys, "eval", str(bundle))
    assert code == 2
    assert f"scenario {folder / 'bad.json'}: checks.0.number" in err and "one of lt, lte" in err


EVALUATOR = """
from agen.evals.context import EvalContext, EvalResult


def refunded_what_was_paid(ctx: EvalContext) -> EvalResult:
    paid = next(
        (c.result for c in ctx.calls if c.name == "shop_find" and c.result), None
    )
    refunded = (ctx.data or {}).get("amount")
    want = ctx.args.get("paid_key", "paid")
    import json
    ok = paid is not None and json.loads(paid)[want] == refunded
    return EvalResult(score=1.0 if ok else 0.25, reason=f"paid {paid}, refunded {refunded}")


async def short(ctx: EvalContext) -> float:
    return 1.0 if len(ctx.summary) < 20 else 0.4


def broken(ctx: EvalContext) -> bool:
    raise RuntimeError("the evaluator has a bug")
"""


def test_a_custom_evaluator_gets_the_context_and_gives_a_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _shop(tmp_path)
    (bundle / "shopchecks.py").write_text(EVALUATOR)
    checks: list[dict[str, Any]] = [
        {
            "type": "custom",
            "function": "shopchecks:refunded_what_was_paid",
            "args": {"paid_key": "paid"},
        },
        {"type": "custom", "function": "shopchecks:short", "threshold": 0.5},
        {"type": "custom", "function": "shopchecks:broken"},
    ]
    _write_evals(bundle, [_scenario("custom", checks)])
    code, out, _ = run_agen(capsys, "eval", str(bundle), "--json")
    assert code == 1
    [s] = json.loads(out)["scenarios"]
    paid, short, broken = s["attempts"][0]["checks"]
    assert (paid["score"], paid["passed"]) == (1.0, True)
    assert paid["reason"] == 'paid {"order": 7, "paid": 30}, refunded 30'
    assert (short["score"], short["passed"]) == (0.4, False)
    assert short["reason"] == "score 0.40 < threshold 0.5"
    assert broken["passed"] is False
    assert broken["reason"] == "shopchecks:broken raised RuntimeError: the evaluator has a bug"
    assert s["score"] == round((1.0 + 0.4 + 0.0) / 3, 4)


def test_a_multi_turn_scenario_checks_each_turn_and_the_end_and_delivers_signals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _shop(tmp_path)
    scenario = {
        "name": "two-turns",
        "tools": TOOLS,
        "model": {
            "provider": "fake",
            "script": [
                {"toolCalls": [{"name": "shop.find", "arguments": {"order": 7}}]},
                _finish("Order 7: paid $30. Refund it?", order=7),
                {"toolCalls": [{"name": "shop.refund", "arguments": {"order": 7, "amount": 30}}]},
                _finish("Refunded order #7.", order=7, amount=30),
            ],
        },
        "turns": [
            {
                "input": "what did order 7 cost?",
                "expect": {"summary": {"contains": "paid $30"}},
                "checks": [{"type": "called", "tool": "shop.refund", "times": 0}],
            },
            {
                "input": "yes, refund it",
                "signals": [{"message": "the customer called again", "fromTask": "01SUPPORT"}],
                "checks": [{"type": "regex", "pattern": "Refunded"}],
            },
        ],
        "checks": [{"type": "calledInOrder", "names": ["shop.find", "shop.refund"]}],
    }
    _write_evals(bundle, [scenario])
    db = tmp_path / "runs.db"
    code, out, err = run_agen(capsys, "eval", str(bundle), "--json", "--store", str(db))
    assert code == 0, err
    [s] = json.loads(out)["scenarios"]
    attempt = s["attempts"][0]
    assert attempt["turns"] == 2 and attempt["summary"] == "Refunded order #7."
    assert [(c["name"], c.get("turn"), c["passed"]) for c in attempt["checks"]] == [
        ("expect", 1, True),
        ("called shop.refund", 1, True),
        ("regex /Refunded/", 2, True),
        ("calledInOrder shop.find → shop.refund", None, True),
    ]
    # --store kept the runs: one conversation, the second run saw the first and the signal
    with sqlite3.connect(db) as con:
        runs = con.execute("SELECT id, conversation_id FROM runs ORDER BY started_ms").fetchall()
        assert len(runs) == 2 and runs[0][1] == runs[1][1]
        said = [
            r[0]
            for r in con.execute(
                "SELECT content FROM messages WHERE run_id = ? AND role = 'user' ORDER BY seq",
                (runs[1][0],),
            )
        ]
    assert said == ["yes, refund it", "[Signal from task 01SUPPORT] the customer called again"]


def test_a_multi_turn_check_that_fails_names_its_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _shop(tmp_path)
    scenario = {
        "name": "forgets",
        "model": {"provider": "fake", "script": [_finish("hello"), _finish("who are you?")]},
        "turns": [
            {"input": "I am Ada"},
            {"input": "what is my name?", "checks": [{"type": "regex", "pattern": "Ada"}]},
        ],
    }
    _write_evals(bundle, [scenario])
    code, out, _ = run_agen(capsys, "eval", str(bundle), "--json")
    assert code == 1
    [s] = json.loads(out)["scenarios"]
    assert s["attempts"][0]["failures"] == [
        "turn 2: regex /Ada/: the summary does not match /Ada/: 'who are you?'"
    ]


def test_compare_of_two_folders_uses_each_folders_own_evaluator_of_the_same_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sides = []
    for name, score in (("old", "1.0"), ("new", "0.2")):
        b = write_bundle(tmp_path / name, "shop")
        (b / "verdict.py").write_text(f"def judge(ctx):\n    return {score}\n")
        check = {"type": "custom", "function": "verdict:judge"}
        _write_evals(b, [{"name": "judged", "input": "hi", "checks": [check]}])
        sides.append(str(b))
    code, out, _ = run_agen(capsys, "eval", "compare", *sides, "--json")
    assert code == 1
    [row] = json.loads(out)["scenarios"]
    assert (row["change"], row["a"]["score"], row["b"]["score"]) == ("regressed", 1.0, 0.2)
