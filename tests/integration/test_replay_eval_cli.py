"""`agen replay` against a real Hub over HTTP, `agen eval --store/--history`, and `agen deploy
--require-eval` deploying a bundle that meets its bar."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from agen.api import registry as r
from agen.cli import app
from agen.errors import AgenError
from agen.testing.openai_server import OpenAIServer, Reply
from agen.wire.deployments import CreateDeploymentRequest, GetDeploymentRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.observe_helpers import TEST_SERVER, Embedded, embedded_hub, http_hub
from tests.unit.test_eval_scenarios import _flaky_suite


async def agen(url: str, token: str, *args: str) -> tuple[int, str, str]:
    res = await asyncio.to_thread(
        CliRunner().invoke, app, [*args, "--hub", url, "--token", token], env={"COLUMNS": "200"}
    )
    if isinstance(res.exception, AgenError):  # what agen.cli.main() prints and exits with
        return res.exception.exit_code, res.stdout, f"error: {res.exception}"
    return res.exit_code, res.stdout, res.stderr


def _shop(root: Path, srv: OpenAIServer, ledger: Path, prompt: str) -> Path:
    """A bundle on the local OpenAI-compatible server, recording its cassettes, with a side-effecting tool."""
    bundle = write_bundle(
        root / "shop",
        "shop",
        prompt=prompt,
        config={
            "kind": "pool",
            "scale": {"min": 1, "max": 1},
            "recordInteractions": True,
            "permissions": {"default": "allow"},
        },
    )
    harness = {"provider": "openai", "model": "m1", "baseUrl": srv.base_url, "maxRetries": 0}
    # the tool server runs in the sandbox: it writes the ledger's folder
    harness["sandbox"] = {"filesystem": {"write": [str(ledger.parent)]}}
    (bundle / "x-agen" / "harness.json").write_text(json.dumps(harness))
    (bundle / "mcp.json").write_text(
        json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": [TEST_SERVER]}}})
    )
    return bundle


def _answers(order: int, ledger: Path) -> list[Reply]:
    return [
        Reply(
            text=None,
            tool_calls=[
                {"name": "t_append", "arguments": {"path": str(ledger), "line": f"refund {order}"}}
            ],
        ),
        Reply(text=f"refunded order {order}"),
    ]


async def _deploy(e: Embedded, bundle: Path) -> None:
    await e.client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))


async def test_replay_after_a_prompt_change_shows_the_changed_tool_call_and_never_repeats_the_side_effect(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.txt"
    async with OpenAIServer() as srv, embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        bundle = _shop(tmp_path, srv, ledger, "Refund what is asked.")
        await _deploy(e, bundle)
        srv.script(*_answers(7, ledger))
        task = await e.run("shop", "refund order 7")
        assert task.state == "succeeded" and ledger.read_text() == "refund 7\n"

        # The recorded answers (the cassette) against the same bundle: nothing changes.
        code, out, _ = await agen(url, token, "replay", task.id, "--json")
        assert code == 0
        same = json.loads(out)
        assert same["changed"] is False
        assert same["calls"]["after"] == [
            {"name": "t_append", "arguments": {"path": str(ledger), "line": "refund 7"}}
        ]

        # The prompt changes; the model (asked again with --model bundle) now refunds another order.
        (bundle / "x-agen" / "agent.md").write_text(
            "---\nname: shop\n---\nRefund one more than asked.\n"
        )
        await _deploy(e, bundle)
        asked = len(srv.requests)
        srv.script(*_answers(8, ledger))
        code, out, _ = await agen(url, token, "replay", task.id, "--model", "bundle")
        assert code == 0, out
        assert "Refund one more than asked." in srv.requests[asked]["messages"][0]["content"]

        def call(order: int) -> str:
            return "t_append(" + json.dumps({"line": f"refund {order}", "path": str(ledger)}) + ")"

        assert f"-{call(7)}" in out and f"+{call(8)}" in out
        assert 'outcome summary: "refunded order 7" → "refunded order 8"' in out

        srv.script(*_answers(8, ledger))
        code, out, _ = await agen(url, token, "replay", task.id, "--model", "bundle", "--json")
        changed = json.loads(out)
        assert changed["changed"] is True and changed["calls"]["changed"] is True
        assert changed["outcome"]["after"]["summary"] == "refunded order 8"
        assert (
            ledger.read_text() == "refund 7\n"
        )  # mocked from the recording: the side effect never ran again

        # --export: the run as a scenario `agen eval` replays offline.
        scenario = tmp_path / "refund.json"
        code, _, _ = await agen(url, token, "replay", task.id, "--export", str(scenario))
        assert code == 0 and json.loads(scenario.read_text())["model"]["provider"] == "replay"
        code, out, _ = await agen(
            url, token, "eval", str(bundle), "--scenarios", str(scenario), "--json"
        )
        assert code == 0, out
        assert json.loads(out)["scenarios"][0]["passHatK"] is True
        assert ledger.read_text() == "refund 7\n"


async def test_eval_record_keeps_results_per_digest_and_history_shows_them(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        bundle = _flaky_suite(tmp_path)
        code, _, _ = await agen(url, token, "eval", str(bundle), "--runs", "5", "--record")
        assert code == 1
        code, out, _ = await agen(url, token, "eval", "history", str(bundle), "--json")
        [batch] = json.loads(out)["evals"]
        assert batch["scenarios"] == {"alpha": [5, 5], "beta": [5, 5], "flaky": [3, 5]}
        assert batch["scores"] == {"alpha": 1.0, "beta": 1.0, "flaky": 0.6}
        code, out, _ = await agen(url, token, "eval", "history", "shop")
        assert code == 0 and "2/3" in out and "flaky 3/5" in out


async def test_deploy_require_eval_deploys_a_bundle_that_meets_its_bar(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        bundle = _flaky_suite(tmp_path, config={"kind": "pool", "eval": {"minPassRate": 0.6}})
        code, out, err = await agen(
            url, token, "deploy", str(bundle), "--require-eval", "--eval-runs", "5"
        )
        assert code == 0, err
        assert "shop: created" in out
        dep = await e.client.call(r.GetDeployment, GetDeploymentRequest(name="shop"))
        assert dep.deployment is not None
