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
        {"toolCalls": [{"name": "t_echo", "arguments": {"text": f"the token is {CANARY}"}},
                       {"name": "t_meta", "arguments": {}}]},
        {"toolCalls": [{"name": "memory_update", "arguments": {"block": "notes", "operation": "append",
                                                               "value": f"remember {CANARY}"}}]},
        {"text": f"done; token {CANARY} ({base64.b64encode(CANARY.encode()).decode()})"},
    ]
    return bundle_files(
        mcp={"mcpServers": {"t": {"command": sys.executable, "args": [TEST_SERVER], "env": {"TOKEN": "${CANARY}"}}}},
        secrets={"secrets": {"CANARY": {"source": "env", "env": "AGEN_TEST_CANARY"}}},
        harness={"provider": "fake", "fake": {"script": script}},
        config={"kind": "pool", "permissions": {"default": "allow"}, "workspace": {"mode": "per_task"},
                "memory": [{"block": "notes", "mode": "append"}]},
    )


def existing(path: str) -> list[str]:
    return [path] if Path(path).exists() else []


def store_files(folder: Path) -> dict[str, bytes]:
    """The SQLite database and its -wal/-shm files, raw."""
    return {p.name: p.read_bytes() for p in folder.glob("agen.db*")}


async def test_canary_secret_never_appears_in_the_store_spans_or_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("AGEN_TEST_CANARY", CANARY)
    bundle = load_bundle_files(canary_bundle())
    db = tmp_path / "agen.db"
    store = await SQLiteStore.open(db)
    tooling = build_tooling(bundle, store)
    runner = Runner(store, bundle, owner="test", toolsets=tooling.toolsets, policy=tooling.policy,
                    redactor=tooling.redactor, extras=tooling.extras)
    try:
        result = await runner.run(RunRequest(input="go", deployment="canary", task_id="task-1"))
        print(result.model_dump_json())
        assert result.status == "succeeded", result.outcome
        tool_rows = await store.all("SELECT name, content FROM messages WHERE role = 'tool' ORDER BY seq")
        by_name = {r["name"]: r["content"] for r in tool_rows}
        assert by_name["t_env"] == "[REDACTED]"  # the server really got the secret value
        assert by_name["t_echo"] == "the token is [REDACTED]"
        meta = json.loads(by_name["t_meta"])
        assert meta["agen/workspace"].endswith("/canary/tasks/task-1")  # the run's task workspace
        assert meta["agen/workspace"] not in existing(meta["agen/workspace"])  # per_task: removed at the end of the run
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
