"""`agen eval compare` (folders, recorded evals by id and by digest), `deploy --require-eval`'s
regressed/fixed lines against the deployed digest, `agen eval history`, and datasets built from
runs with negative feedback that then run as an eval."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from agen.api import registry as r
from agen.wire.deployments import CreateDeploymentRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.integration.test_replay_eval_cli import agen
from tests.observe_helpers import TEST_SERVER, embedded_hub, http_hub
from tests.unit.test_eval_scenarios import _finish, _write_evals

# The old version echoes the input; the new one always says goodbye.
SCENARIOS: list[dict[str, Any]] = [
    {"name": "greets", "input": "hello", "checks": [{"type": "regex", "pattern": "hello"}]},
    {"name": "signs-off", "input": "bye", "checks": [{"type": "regex", "pattern": "goodbye"}]},
    {"name": "answers", "input": "anything", "checks": [{"type": "regex", "pattern": "."}]},
]
CONFIG = {"kind": "pool", "eval": {"minPassRate": 0.5}}


def _versions(root: Path) -> tuple[Path, Path]:
    old = write_bundle(root / "old", "shop", config=CONFIG)
    new = write_bundle(root / "new", "shop", script=[{"text": "goodbye"}], config=CONFIG)
    for b in (old, new):
        _write_evals(b, SCENARIOS)
    return old, new


async def test_compare_two_bundle_folders_shows_one_regression_and_one_fix_regressions_first(
    tmp_path: Path,
) -> None:
    old, new = _versions(tmp_path)
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        code, out, _ = await agen(url, token, "eval", "compare", str(old), str(new), "--json")
        assert code == 1  # a regression
        result = json.loads(out)
        assert [(s["scenario"], s["change"]) for s in result["scenarios"]] == [
            ("greets", "regressed"),
            ("signs-off", "fixed"),
            ("answers", "same"),
        ]
        greets = result["scenarios"][0]
        assert (greets["a"]["score"], greets["b"]["score"], greets["scoreDelta"]) == (
            1.0,
            0.0,
            -1.0,
        )
        assert greets["a"]["passRate"] == 1.0 and greets["b"]["passRate"] == 0.0
        assert result["a"]["digest"] != result["b"]["digest"]

        code, out, _ = await agen(url, token, "eval", "compare", str(old), str(new))
        lines = out.splitlines()
        assert "SCORE A" in out and "Δ SCORE" in out and "COST A" in out and "MS A" in out
        first = next(i for i, line in enumerate(lines) if line.startswith("greets"))
        assert "regressed" in lines[first] and "-1.00" in lines[first]
        assert "fixed" in lines[first + 1] and lines[first + 1].startswith("signs-off")
        assert "1 regressed, 1 fixed" in out

        # recorded evals, compared by id and by digest: the same verdicts, read from the Hub
        ids = []
        for b in (old, new):
            code, _, err = await agen(url, token, "eval", str(b), "--record")
            assert code == 1 and "recorded eval " in err
            ids.append(err.split("recorded eval ")[1].split()[0])
        code, out, _ = await agen(url, token, "eval", "compare", ids[0], ids[1], "--json")
        assert code == 1 and json.loads(out)["regressed"] == ["greets"]
        assert json.loads(out)["fixed"] == ["signs-off"]
        digest_old = json.loads(out)["a"]["digest"]
        code, out, _ = await agen(url, token, "eval", "compare", digest_old, str(new), "--json")
        assert json.loads(out)["regressed"] == ["greets"] and json.loads(out)["b"]["ref"] == str(
            new
        )
        short = digest_old[: len("sha256:") + 12]  # as tables show it
        code, out, _ = await agen(url, token, "eval", "compare", short, ids[1], "--json")
        assert json.loads(out)["a"]["digest"] == digest_old
        code, out, _ = await agen(url, token, "eval", "compare", ids[1], ids[0], "--json")
        assert json.loads(out)["fixed"] == ["greets"] and json.loads(out)["regressed"] == [
            "signs-off"
        ]

        code, _, err = await agen(url, token, "eval", "compare", "01NOPE", str(new))
        assert code == 4 and "no recorded eval with id or digest '01NOPE'" in err


async def test_deploy_require_eval_prints_what_regressed_and_what_was_fixed_against_the_deployed_digest(
    tmp_path: Path,
) -> None:
    old, new = _versions(tmp_path)
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        code, out, err = await agen(url, token, "deploy", str(old), "--require-eval")
        assert code == 0, err
        assert "regressed" not in err and "recorded eval" in err  # nothing on file to compare
        code, out, err = await agen(url, token, "deploy", str(new), "--require-eval")
        assert code == 0, err
        assert "regressed: greets now fails (passed last eval)" in err
        assert "fixed: signs-off now passes (failed last eval)" in err
        assert "answers" not in err  # unchanged: silent

        code, out, _ = await agen(url, token, "eval", "history", "shop", "--json")
        evals = json.loads(out)["evals"]
        assert [x["scenarios"] for x in evals] == [
            {"answers": [1, 1], "greets": [0, 1], "signs-off": [1, 1]},
            {"answers": [1, 1], "greets": [1, 1], "signs-off": [0, 1]},
        ]
        code, out, _ = await agen(url, token, "eval", "history", "shop")
        assert code == 0 and evals[0]["batch"] in out and "2/3" in out and "0.67" in out
        code, out, _ = await agen(url, token, "eval", "history", "nothing")
        assert code == 0 and "no recorded evals of nothing" in out


async def test_a_dataset_from_three_runs_with_negative_feedback_runs_as_an_eval_with_mocked_tools(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.txt"
    script = [
        {"toolCalls": [{"name": "t.append", "arguments": {"path": str(ledger), "line": "refund"}}]},
        _finish("refunded"),
    ]
    bundle = write_bundle(
        tmp_path / "shop",
        "shop",
        script=script,
        config={"kind": "pool", "scale": {"min": 1, "max": 1}, "permissions": {"default": "allow"}},
    )
    (bundle / "mcp.json").write_text(
        json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": [TEST_SERVER]}}})
    )
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        await e.client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        rated = {}
        for text, score in [
            ("refund order 7", "-1"),
            ("refund order 8", "-0.5"),
            ("refund order 7", "-1"),  # the same input again: one scenario
            ("refund order 9", "-0.2"),
            ("what is the weather", "1"),  # good: not picked
        ]:
            task = await e.run("shop", text)
            assert task.state == "succeeded"
            code, _, err = await agen(
                url,
                token,
                "feedback",
                "record",
                task.id,
                "--score",
                score,
                "--note",
                f"bad: {text}",
            )
            assert code == 0, err
            rated[task.id] = text
        assert ledger.read_text() == "refund\n" * 5

        folder = bundle / "x-agen" / "evals"
        checks = tmp_path / "checks.json"
        checks.write_text(
            json.dumps(
                [
                    {"type": "called", "tool": "t.append", "args": {"line": "refund"}},
                    {"type": "regex", "pattern": "refunded"},
                ]
            )
        )
        code, out, err = await agen(
            url,
            token,
            "eval",
            "dataset",
            "add",
            str(folder),
            "--from-feedback",
            "score<0",
            "--checks",
            str(checks),
        )
        assert code == 0, err
        files = sorted(folder.glob("*.json"))
        assert len(files) == 3 and out.count("added ") == 3
        assert "skipped 1 run(s) whose input is already in" in err
        scenarios = [json.loads(f.read_text()) for f in files]
        assert sorted(s["input"] for s in scenarios) == [
            "refund order 7",
            "refund order 8",
            "refund order 9",
        ]
        first = next(s for s in scenarios if s["input"] == "refund order 8")
        [mock] = first["tools"]
        assert (mock["name"], mock["args"]) == ("t_append", {"path": str(ledger), "line": "refund"})
        assert mock["result"]  # what the tool answered in the real run
        assert "model" not in first  # the bundle under test answers
        assert (
            "feedback -0.50 by " in first["description"]
            and "bad: refund order 8" in first["description"]
        )

        # again: nothing new (deduplicated against the folder)
        code, out, err = await agen(
            url, token, "eval", "dataset", "add", str(folder), "--from-feedback", "score<0"
        )
        assert code == 0 and "0 scenario(s) added" in err

        code, out, err = await agen(url, token, "eval", str(bundle), "--json")
        assert code == 0, err
        report = json.loads(out)
        assert len(report["scenarios"]) == 3 and report["allPassed"] is True
        assert all(s["score"] == 1.0 for s in report["scenarios"])
        assert ledger.read_text() == "refund\n" * 5  # the tool was mocked, never run again

        # by run id, and by deployment and time: every finished run, one scenario per input
        weather = next(t for t, text in rated.items() if text == "what is the weather")
        code, out, _ = await agen(
            url, token, "eval", "dataset", "add", str(tmp_path / "one"), "--run", weather, "--json"
        )
        assert code == 0 and len(json.loads(out)["added"]) == 1
        code, out, _ = await agen(
            url,
            token,
            "eval",
            "dataset",
            "add",
            str(tmp_path / "all"),
            "--deployment",
            "shop",
            "--since",
            "1h",
            "--json",
        )
        assert code == 0 and len(json.loads(out)["added"]) == 4
        assert len(json.loads(out)["duplicates"]) == 1

        code, _, err = await agen(
            url, token, "eval", "dataset", "add", str(folder), "--from-feedback", "stars>3"
        )
        assert code == 2 and "'stars>3' is not a filter" in err
