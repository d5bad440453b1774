"""What the CLI prints for people and for scripts: whole values when piped, JSON errors, JSON Lines."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agen.api import registry as r
from agen.cli import app
from agen.errors import AgenError
from agen.wire.deployments import CreateDeploymentRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.observe_helpers import TEST_SERVER, Embedded, embedded_hub, http_hub


async def agen(url: str, token: str, *args: str) -> tuple[int, str, str]:
    runner = CliRunner()
    res = await asyncio.to_thread(
        runner.invoke, app, [*args, "--hub", url, "--token", token], env={"COLUMNS": "80"}
    )
    if isinstance(res.exception, AgenError):
        return res.exception.exit_code, res.stdout, f"error: {res.exception}"
    return res.exit_code, res.stdout, res.stderr


LONG = "make build && make test && make package && rm -rf /home/user/projects/important-data"


async def _gate(e: Embedded) -> str:
    """A task waiting for approval of a tool call whose dangerous part is at the end of its arguments."""
    await e.deploy(
        "gate-long",
        script=[{"toolCalls": [{"name": "t_echo", "arguments": {"text": LONG}}]}, {"text": "ok"}],
        config={
            "kind": "pool",
            "scale": {"min": 1, "max": 1},
            "permissions": {"ask": ["t.echo"], "default": "allow"},
        },
        mcp={"t": {"command": sys.executable, "args": [TEST_SERVER]}},
    )
    task = await e.submit("gate-long", "build it")
    for _ in range(600):
        t = await e.wait(task.id, seconds=1)
        if t.pending_approvals:
            return t.pending_approvals[0]
    raise AssertionError("the task never asked for an approval")


async def test_piped_approvals_show_the_whole_arguments_and_every_column(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        approval = await _gate(e)
        code, out, _ = await agen(url, token, "approvals")
        assert code == 0
        header, row = out.splitlines()
        assert header.split() == ["ID", "DEPLOYMENT", "TASK", "TOOL", "ARGUMENTS", "STATE", "ASKED"]
        assert approval in row and json.dumps({"text": LONG}) in row and "pending" in row
        code, out, _ = await agen(url, token, "approvals", "--all")
        assert code == 0 and approval in out


async def test_approvals_show_prints_the_whole_call_as_indented_json(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        approval = await _gate(e)
        code, out, err = await agen(url, token, "approvals", "show", approval[-6:])
        assert code == 0, err
        assert f"approval    {approval}" in out and "tool        t.echo" in out
        args = out.split("arguments\n", 1)[1]
        assert json.loads(args) == {"text": LONG}  # whole at 80 columns, never cut
        assert args.startswith('{\n  "text": ')  # indented, one key a line
        code, out, _ = await agen(url, token, "approvals", "show", approval, "--json")
        assert json.loads(out)["approval"]["arguments"] == {"text": LONG}
        code, _, err = await agen(url, token, "approvals", "show", "01ZZZZZZZZZZZZZZZZZZZZZZZZ")
        assert code == 4 and "agen approvals --all" in err


async def test_trace_exits_0_for_a_run_that_recovered_from_an_error_and_1_for_a_failed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        # A tool call that errors, then an answer: an error span inside a run that succeeded.
        await e.deploy(
            "recovers",
            script=[{"toolCalls": [{"name": "no_such_tool", "arguments": {}}]}, {"text": "fine"}],
        )
        ok = await e.run("recovers", "go")
        assert ok.state == "succeeded"
        code, out, _ = await agen(url, token, "trace", ok.id, "--json")
        assert json.loads(out)["errors"] >= 1  # the failed attempt is still shown
        code, _, _ = await agen(url, token, "trace", ok.id)
        assert code == 0

        # A model that cannot be reached: the run fails, and its transcript says why.
        bundle = write_bundle(tmp_path / "unreachable", "unreachable")
        (bundle / "x-agen" / "harness.json").write_text(
            json.dumps(
                {
                    "provider": "openai",
                    "model": "m1",
                    "baseUrl": "http://127.0.0.1:9/v1",
                    "maxRetries": 0,
                }
            )
        )
        await e.client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        bad = await e.run("unreachable", "go")
        assert bad.state == "failed"
        code, _, _ = await agen(url, token, "trace", bad.id)
        assert code == 1
        code, out, _ = await agen(url, token, "transcript", bad.id)
        outcome = bad.outcome or {}
        assert code == 0 and out.rstrip().splitlines()[-1] == (
            f"── run failed ({outcome['reason']}): {outcome['summary']} ──"
        )
        assert "127.0.0.1:9" in outcome["summary"]  # the summary says what could not be reached


async def test_events_json_is_one_object_a_line(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        await e.deploy("echo")
        await e.run("echo", "hi")
        code, out, _ = await agen(url, token, "events", "--json")
        lines = out.splitlines()
        assert code == 0 and len(lines) >= 2
        events = [json.loads(line) for line in lines]  # JSON Lines: every line parses alone
        assert "task.succeeded" in {ev["type"] for ev in events}


async def test_json_errors_are_an_error_object_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli_helpers import run_agen

    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        hub = ("--hub", url, "--token", token)
        cases = [
            (("wait", "01NOPE", "--json", *hub), 4, "not_found"),
            (("tasks", "--limit", "0", "--json", *hub), 2, "invalid"),
            (("ps", "--json", "--hub", "http://127.0.0.1:9"), 3, "unavailable"),
            (("ps", "--json", "--no-such-flag"), 2, "invalid"),
        ]
        for argv, code, kind in cases:
            got, out, err = await asyncio.to_thread(run_agen, capsys, *argv)
            body = json.loads(out)
            assert got == code and body["error"]["code"] == kind, argv
            assert body["error"]["message"] and body["error"]["message"] in err  # people see it too


def _complete(words: str, env_extra: dict[str, str] | None = None) -> list[str]:
    """What bash would offer after ``words`` (typed so far, the last word incomplete)."""
    import os
    import subprocess

    env = {
        **os.environ,
        "_AGEN_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
        **(env_extra or {}),
    }
    done = subprocess.run(
        [sys.executable, "-m", "agen"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.split()


async def test_shell_completion_offers_deployment_names_and_task_ids(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        await e.deploy("hello")
        await e.deploy("helper")
        task = await e.run("hello", "hi")
        hub = f"--hub {url} --token {token}"
        names = await asyncio.to_thread(_complete, f"agen logs {hub} hel")
        assert sorted(names) == ["hello", "helper"]
        ids = await asyncio.to_thread(_complete, f"agen wait {hub} {task.id[:4]}")
        assert task.id in ids
    # No Hub at all: nothing offered, and nothing printed into the prompt.
    assert await asyncio.to_thread(_complete, "agen logs --hub http://127.0.0.1:9 h") == []


async def test_a_deployment_whose_instances_cannot_start_shows_failing_with_the_reason(
    tmp_path: Path,
) -> None:
    from agen.wire.deployments import ListDeploymentsRequest

    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        missing = str(tmp_path / "no-such-server")
        await e.deploy(
            "broken",
            config={"kind": "pool", "scale": {"min": 1, "max": 1}},
            mcp={"tools": {"command": missing, "args": []}},
        )
        await e.deploy("fine")
        for _ in range(600):
            [broken] = [
                d
                for d in (
                    await e.client.call(r.ListDeployments, ListDeploymentsRequest())
                ).deployments
                if d.name == "broken"
            ]
            if broken.activity != "idle":
                break
            await asyncio.sleep(0.1)
        assert broken.activity == "failing" and missing in (broken.failing_reason or "")
        code, out, _ = await agen(url, token, "ps")
        rows = {line.split()[0]: line for line in out.splitlines()[1:]}
        assert code == 0 and "failing (" in rows["broken"] and missing in rows["broken"]
        assert rows["fine"].split()[2] == "idle"


async def test_ps_counts_the_last_hours_failed_tasks_and_says_what_a_deployment_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        await e.deploy_unreachable()
        for _ in range(2):  # every task fails: the deployment is idle, but not healthy
            assert (await e.run("unreachable", "go")).state == "failed"
        approval = await _gate(e)
        code, out, _ = await agen(url, token, "ps")
        header, *lines = out.splitlines()
        rows = {line.split()[0]: line.split() for line in lines}
        assert code == 0 and header.split()[:5] == ["NAME", "KIND", "ACTIVITY", "FAILED", "(1h)"]
        assert rows["unreachable"][2:4] == ["idle", "2"]
        assert rows["gate-long"][2:5] == ["needs", "approval", "0"], approval
        code, out, _ = await agen(url, token, "ps", "--json")
        [bad] = [d for d in json.loads(out)["deployments"] if d["name"] == "unreachable"]
        assert bad["failed_1h"] == 2 and "127.0.0.1:9" in bad["last_failure"]


@pytest.mark.parametrize("template", ["fleet-steward", "approval-triage"])
async def test_deploying_a_template_without_its_hub_token_says_exactly_what_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, template: str
) -> None:
    from agen.bundle.templates import copy_template, get_template

    monkeypatch.delenv("AGEN_HUB_TOKEN", raising=False)
    bundle = tmp_path / template
    copy_template(get_template(template), bundle)
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        for argv in (("deploy", str(bundle), "--validate"), ("deploy", str(bundle))):
            code, _, err = await agen(url, token, *argv)
            assert code == 0, err
            assert "warning: secret AGEN_HUB_TOKEN" in err and "is unset in" in err, argv
            assert "agen token create" in err  # what the token is and how to make one
    monkeypatch.setenv("AGEN_HUB_TOKEN", "agen_x")
    code, _, err = await agen(url, token, "deploy", str(bundle), "--validate")
    assert code == 0 and "AGEN_HUB_TOKEN" not in err


async def test_the_short_ids_the_tui_shows_work_in_every_id_taking_command(tmp_path: Path) -> None:
    from agen.tui.fmt import short_id

    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        await e.deploy("echo")
        first = await e.run("echo", "one")
        second = await e.run("echo", "two")
        tail = short_id(second.id)  # the last 10 characters, as the TUI's tables show them
        assert tail != second.id
        code, out, err = await agen(url, token, "wait", tail, "--json")
        assert code == 0 and json.loads(out)["id"] == second.id, (out, err)
        code, out, _ = await agen(url, token, "query", tail.lower(), "--json")
        assert code == 0 and json.loads(out)["task"]["id"] == second.id
        code, out, _ = await agen(url, token, "transcript", second.id[:22])  # a prefix works too
        assert code == 0 and "two" in out
        code, _, _ = await agen(url, token, "trace", tail)
        assert code == 0
        code, out, _ = await agen(url, token, "runs", "--task", tail, "--json")
        assert [r["task_id"] for r in json.loads(out)["runs"]] == [second.id]

        common = next(n for n in range(26) if first.id[n] != second.id[n])
        assert common >= 4  # ULIDs made a moment apart share their time prefix
        code, _, err = await agen(url, token, "cancel", first.id[:common])
        assert code == 2 and "ambiguous" in err and first.id in err and second.id in err
        code, _, err = await agen(url, token, "wait", "ZZZZZZZZ")
        assert code == 4 and "no task id starts or ends with 'ZZZZZZZZ'" in err
        code, _, err = await agen(url, token, "wait", "AB")
        assert code == 2 and "too short" in err
