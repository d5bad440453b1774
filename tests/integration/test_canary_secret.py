"""A canary secret echoed through MCP tools never reaches the Store, spans or output."""

from __future__ import annotations

import base64
import json
import logging
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from agen.bundle import load_bundle_files
from agen.runner.loop import Runner
from agen.runner.tooling import build_tooling
from agen.runner.types import RunRequest
from agen.store.sqlite import SQLiteStore
from tests.integration.mcp_helpers import TEST_SERVER
from tests.unit.bundle_helpers import bundle_files

CANARY = "canary-7f3a9c2e-do-not-leak"


def canary_bundle() -> dict[str, bytes]:
    script = [
        {"toolCalls": [{"name": "t_env", "arguments": {"name": "TOKEN"}}]},
        {
            "toolCalls": [
                {"name": "t_echo", "arguments": {"text": f"the token is {CANARY}"}},
                {"name": "t_meta", "arguments": {}},
            ]
        },
        {
            "toolCalls": [
                {
                    "name": "memory_update",
                    "arguments": {
                        "block": "notes",
                        "operation": "append",
                        "value": f"remember {CANARY}",
                    },
                }
            ]
        },
        {"text": f"done; token {CANARY} ({base64.b64encode(CANARY.encode()).decode()})"},
    ]
    return bundle_files(
        mcp={
            "mcpServers": {
                "t": {
                    "command": sys.executable,
                    "args": [TEST_SERVER],
                    "env": {"TOKEN": "${CANARY}"},
                }
            }
        },
        secrets={"secrets": {"CANARY": {"source": "env", "env": "AGEN_TEST_CANARY"}}},
        harness={"provider": "fake", "fake": {"script": script}},
        config={
            "kind": "pool",
            "permissions": {"default": "allow"},
            "workspace": {"mode": "per_task"},
            "memory": [{"block": "notes", "mode": "append"}],
        },
    )


def existing(path: str) -> list[str]:
    return [path] if Path(path).exists() else []


def store_files(folder: Path, pattern: str = "agen.db*") -> dict[str, bytes]:
    """The SQLite database and its -wal/-shm files, raw."""
    return {p.name: p.read_bytes() for p in folder.glob(pattern)}


async def test_canary_secret_never_appears_in_the_store_spans_or_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("AGEN_TEST_CANARY", CANARY)
    bundle = load_bundle_files(canary_bundle())
    db = tmp_path / "agen.db"
    store = await SQLiteStore.open(db)
    tooling = build_tooling(bundle, store)
    runner = Runner(
        store,
        bundle,
        owner="test",
        toolsets=tooling.toolsets,
        policy=tooling.policy,
        redactor=tooling.redactor,
        extras=tooling.extras,
    )
    try:
        result = await runner.run(RunRequest(input="go", deployment="canary", task_id="task-1"))
        print(result.model_dump_json())
        assert result.status == "succeeded", result.outcome
        tool_rows = await store.all(
            "SELECT name, content FROM messages WHERE role = 'tool' ORDER BY seq"
        )
        by_name = {r["name"]: r["content"] for r in tool_rows}
        assert by_name["t_env"] == "[REDACTED]"  # the server really got the secret value
        assert by_name["t_echo"] == "the token is [REDACTED]"
        meta = json.loads(by_name["t_meta"])
        assert meta["agen/workspace"].endswith("/canary/tasks/task-1")  # the run's task workspace
        assert meta["agen/workspace"] not in existing(
            meta["agen/workspace"]
        )  # per_task: removed at the end of the run
        notes = await store.scalar("SELECT value FROM memory_blocks WHERE label = 'notes'")
        assert notes == "remember [REDACTED]"
        spans = await store.all("SELECT attrs, error FROM spans")
        assert spans and CANARY not in json.dumps(spans)
    finally:
        await runner.close()
        await store.close()

    forms = [CANARY, base64.b64encode(CANARY.encode()).decode(), quote(CANARY, safe="")]
    for name, data in store_files(tmp_path).items():
        for form in forms:
            assert form.encode() not in data, f"{form} found in {name}"
    out, err = capfd.readouterr()
    logs = "\n".join(r.getMessage() for r in caplog.records)
    for form in forms:
        assert form not in out and form not in err and form not in logs
    assert "[REDACTED]" in out


async def test_a_canary_typed_into_the_task_input_is_masked_in_the_store_and_every_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The task row (Hub, at submit), the run's input and first message (Runner, at run open) and what the
    model receives all hold [REDACTED]; `agen tasks`, `runs --json` and `transcript --json` never show it."""
    from agen.api import registry as r
    from agen.wire.deployments import CreateDeploymentRequest
    from tests.fleet_helpers import files_b64, write_bundle
    from tests.integration.test_observe_cli import agen
    from tests.observe_helpers import embedded_hub, http_hub

    monkeypatch.setenv("AGEN_TEST_CANARY", CANARY)
    forms = [CANARY, base64.b64encode(CANARY.encode()).decode(), quote(CANARY, safe="")]
    typed = f"deploy with key {CANARY} (or {forms[1]}) now"
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        root = write_bundle(
            tmp_path / "echo", "echo"
        )  # echo mode: the answer repeats what the model received
        (root / "x-agen" / "secrets.json").write_text(
            json.dumps({"secrets": {"CANARY": {"source": "env", "env": "AGEN_TEST_CANARY"}}})
        )
        await e.client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(root)))
        task = await e.run("echo", typed)
        assert task.state == "succeeded", task.error
        assert task.input == "deploy with key [REDACTED] (or [REDACTED]) now"

        outputs = {}
        for args in (
            ("tasks",),
            ("tasks", "--json"),
            ("runs", "--json"),
            ("transcript", task.id, "--json"),
            ("transcript", task.id),
        ):
            code, out, err = await agen(url, token, *args)
            assert code == 0, err
            outputs[" ".join(args)] = out + err
        messages = json.loads(outputs[f"transcript {task.id} --json"])["messages"]
        assert messages[0]["content"] == "deploy with key [REDACTED] (or [REDACTED]) now"
        assert "[REDACTED]" in messages[1]["content"]  # the model itself received the masked input
        for name, data in {
            **store_files(tmp_path, "hub.db*"),
            **{k: v.encode() for k, v in outputs.items()},
        }.items():
            for form in forms:
                assert form.encode() not in data, f"{form} found in {name}"
    for name, data in store_files(tmp_path, "hub.db*").items():
        for form in forms:
            assert form.encode() not in data, f"{form} found in {name} after close"
