"""`agen eval`: scenario files run K times offline with mocked tools; pass@k and pass^k; history;
`agen deploy --require-eval` refuses a bundle below its bar."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import run_agen
from tests.fleet_helpers import write_bundle


def _finish(summary: str, **data: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"status": "done", "summary": summary}
    if data:
        args["data"] = data
    return {"toolCalls": [{"name": "finish", "arguments": args}]}


def _refund_script(order: int) -> list[dict[str, Any]]:
    return [
        {"toolCalls": [{"name": "shop.refund", "arguments": {"order": order}}]},
        _finish(f"refunded order {order}", order=order),
    ]


def _scenario(name: str, *, scripts: list[list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "name": name,
        "input": "refund order 7",
        "tools": [{"name": "shop.refund", "args": {"order": 7}, "result": {"ok": True}}],
        "model": {"provider": "fake", "scripts": scripts},
        "expect": {
            "status": "done",
            "summary": {"contains": "refunded"},
            "data": [{"path": "$.order", "equals": 7}],
            "called": [{"name": "shop.refund", "args": {"order": 7}}],
            "notCalled": ["shop.delete"],
        },
    }


def _write_evals(bundle: Path, scenarios: list[dict[str, Any]]) -> Path:
    folder = bundle / "x-agen" / "evals"
    folder.mkdir(parents=True, exist_ok=True)
    for s in scenarios:
        (folder / f"{s['name']}.json").write_text(json.dumps(s))
    return folder


def _flaky_suite(root: Path, config: dict[str, Any] | None = None) -> Path:
    """Three scenarios; 'flaky' fails runs 1 and 3 of 5 (its fake model refunds the wrong order then)."""
    bundle = write_bundle(root / "shop", "shop", config=config)
    good = _refund_script(7)
    _write_evals(
        bundle,
        [
            _scenario("alpha", scripts=[good]),
            _scenario("beta", scripts=[good]),
            _scenario(
                "flaky", scripts=[good, _refund_script(8)]
            ),  # run i uses scripts[i % 2]: runs 1, 3 fail
        ],
    )
    return bundle


def test_eval_reports_pass_at_k_and_pass_hat_k_when_one_scenario_fails_2_of_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _flaky_suite(tmp_path)
    code, out, _ = run_agen(capsys, "eval", str(bundle), "--runs", "5", "--json")
    assert code == 1
    report = json.loads(out)
    by_name = {s["scenario"]: s for s in report["scenarios"]}
    assert {
        n: (s["passed"], s["runs"], s["passAtK"], s["passHatK"]) for n, s in by_name.items()
    } == {"alpha": (5, 5, True, True), "beta": (5, 5, True, True), "flaky": (3, 5, True, False)}
    failed = [a for a in by_name["flaky"]["attempts"] if not a["passed"]]
    assert [a["run"] for a in failed] == [1, 3]
    assert failed[0]["failures"] == [
        "data $.order is 8, expected 7",
        'shop.refund was not called with {"order": 7}',
    ]
    assert report["passRate"] == pytest.approx(2 / 3) and report["allPassed"] is False

    code, out, _ = run_agen(capsys, "eval", str(bundle), "--runs", "5")
    assert code == 1
    assert "flaky" in out and "3/5" in out and "run 1: data $.order is 8, expected 7" in out
    assert "2/3 scenarios passed all 5 run(s)" in out


def test_eval_passing_suite_exits_0_and_mocks_answer_only_matching_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = write_bundle(tmp_path / "shop", "shop")
    wrong_args = _scenario("wrong-args", scripts=[_refund_script(9)])
    wrong_args["expect"] = {"status": "done", "notCalled": ["shop.delete"]}
    scenario = tmp_path / "one.json"
    scenario.write_text(json.dumps(wrong_args))
    code, out, _ = run_agen(
        capsys, "eval", str(bundle), "--scenarios", str(scenario), "--runs", "2", "--json"
    )
    assert code == 0
    [s] = json.loads(out)["scenarios"]
    assert s["passHatK"] and s["attempts"][0]["calls"][0] == {
        "name": "shop_refund",
        "arguments": {"order": 9},
    }


def test_eval_refuses_an_unknown_field_or_a_mocked_builtin_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = write_bundle(tmp_path / "shop", "shop")
    bad = _scenario("bad", scripts=[_refund_script(7)])
    bad["expect"]["sumary"] = {"contains": "x"}
    _write_evals(bundle, [bad])
    code, _, err = run_agen(capsys, "eval", str(bundle))
    assert code == 2
    assert "bad.json" in err and "sumary" in err and "Traceback" not in err

    mocked_finish = _scenario("bad", scripts=[_refund_script(7)])
    mocked_finish["tools"].append({"name": "finish", "result": "done"})
    _write_evals(bundle, [mocked_finish])
    code, _, err = run_agen(capsys, "eval", str(bundle))
    assert code == 2 and "finish is a built-in tool" in err


def test_deploy_require_eval_refuses_a_bundle_below_its_bar_naming_the_failed_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _flaky_suite(tmp_path)  # default bar: every scenario passes every run
    code, _, err = run_agen(
        capsys,
        "deploy",
        str(bundle),
        "--require-eval",
        "--eval-runs",
        "5",
        "--hub",
        "http://127.0.0.1:9",
    )  # never reached: refused before any Hub call
    assert code == 2
    assert "deploy refused" in err and "flaky (3/5)" in err and "minPassRate 1.00" in err
    assert "alpha" not in err.split("failed:")[1]
