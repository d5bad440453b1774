"""The MCP tool catalogue (builtinTools.toolCatalogue) in real runs on a real stdio MCP server: past
the threshold the model is sent server names instead of schemas, lists a server's tools, activates
the ones it needs, and a run resumed by another owner still sends the activated tools' schemas."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from agen.bundle import Bundle, load_bundle_files
from agen.errors import FencedError
from agen.runner.loop import Runner
from agen.runner.providers import build_accounts
from agen.runner.tooling import build_tooling
from agen.runner.turn import TurnPolicy
from agen.runner.types import RunRequest
from agen.store import SQLiteStore
from tests.integration.mcp_helpers import TEST_SERVER, eventually
from tests.runner_helpers import Capturing
from tests.unit.bundle_helpers import bundle_files

MCP = {"mcpServers": {"t": {"command": sys.executable, "args": [TEST_SERVER]}}}


def bundle(*turns: dict[str, Any], threshold: int | None = 0, **config: Any) -> Bundle:
    cfg = {
        "kind": "pool",
        "permissions": {"default": "allow"},
        "builtinTools": {"workspace": False, "toolCatalogue": threshold},
        **config,
    }
    harness = {
        "provider": "fake",
        "parallelToolCalls": False,
        "fake": {"script": list(turns)},
        # the sandboxed test server writes and waits on files in the test's folder, under tmp
        "sandbox": {"filesystem": {"write": [tempfile.gettempdir()]}},
    }
    return load_bundle_files(bundle_files(harness=harness, config=cfg, mcp=MCP))


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"toolCalls": [{"name": tool, "arguments": arguments}]}


async def capturing(store: SQLiteStore, b: Bundle, owner: str = "test") -> tuple[Runner, Capturing]:
    t = build_tooling(b, store)
    accounts = await build_accounts(b)
    cap = Capturing(accounts[0].provider)
    accounts[0].provider = cap
    r = Runner(
        store,
        b,
        owner=owner,
        toolsets=t.toolsets,
        policy=t.policy,
        redactor=t.redactor,
        accounts=accounts,
        turn_policy=TurnPolicy(max_retries=0, backoff_base_s=0.001),
    )
    return r, cap


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


async def tool_messages(store: SQLiteStore, run_id: str) -> list[dict[str, Any]]:
    return await store.all(
        "SELECT name, content, is_error FROM messages WHERE run_id = ? AND role = 'tool' ORDER BY seq",
        (run_id,),
    )


async def test_the_model_lists_a_server_activates_a_tool_and_calls_it(tmp_path: Path) -> None:
    b = bundle(
        call("list_mcp_server_tools", server="t"),
        call("activate_tool", name="t.echo"),  # the bundle's name works as well as the wire name
        call("t_echo", text="hello"),
        {"text": "done"},
    )
    store = await SQLiteStore.open(tmp_path / "agen.db")
    r, cap = await capturing(store, b)
    try:
        res = await r.run(RunRequest(input="go", task_id="t-1"))
        msgs = await tool_messages(store, res.run_id)
    finally:
        await r.close()
        await store.close()
    assert res.status == "succeeded", res.outcome
    first = cap.requests[0].tools
    assert "t_echo" not in names(first) and "t_env" not in names(first)
    assert {"list_mcp_server_tools", "activate_tool", "finish"} <= set(names(first))
    listing = next(t for t in first if t["function"]["name"] == "list_mcp_server_tools")
    assert (
        "- t: Tools for agen's tests: environment, _meta, files, gates and crashes. (13 tools)"
        in listing["function"]["description"]
    )
    assert listing["function"]["parameters"]["properties"]["server"]["enum"] == ["t"]
    assert msgs[0]["is_error"] == 0 and "t_echo: Return the text unchanged." in msgs[0]["content"]
    assert msgs[1]["content"] == "activated t_echo: you can call it from your next turn"
    assert "t_echo" not in names(cap.requests[1].tools)
    assert names(cap.requests[2].tools)[-1] == "t_echo"  # added at the end: the prefix is kept
    assert "t_env" not in names(cap.requests[2].tools)
    assert (msgs[2]["name"], msgs[2]["content"], msgs[2]["is_error"]) == ("t_echo", "hello", 0)


async def test_below_the_threshold_every_schema_is_sent(tmp_path: Path) -> None:
    b = bundle({"text": "done"}, threshold=100)
    store = await SQLiteStore.open(tmp_path / "agen.db")
    r, cap = await capturing(store, b)
    try:
        await r.run(RunRequest(input="go", task_id="t-1"))
    finally:
        await r.close()
        await store.close()
    sent = names(cap.requests[0].tools)
    assert "t_echo" in sent and "list_mcp_server_tools" not in sent


async def test_activated_tools_keep_permissions_approvals_and_the_effect_ledger(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.txt"
    b = bundle(
        call("t_env", name="PATH"),  # in the catalogue, not active yet
        call("list_mcp_server_tools", server="t"),
        call("activate_tool", name="t_pid"),  # denied by a rule: not in the catalogue
        call("activate_tool", name="t_append"),
        call("t_append", path=str(out), line="one"),
        call("activate_tool", name="t_echo"),
        call("t_echo", text="needs an approver"),
        {"text": "done"},
        permissions={"default": "allow", "deny": ["t.pid"], "ask": ["t.echo"]},
    )
    store = await SQLiteStore.open(tmp_path / "agen.db")
    r, _cap = await capturing(store, b)
    try:
        res = await r.run(RunRequest(input="go", task_id="t-1"))
        msgs = await tool_messages(store, res.run_id)
        effects = await store.all("SELECT tool, state FROM effects WHERE run_id = ?", (res.run_id,))
    finally:
        await r.close()
        await store.close()
    assert res.status == "succeeded", res.outcome
    assert msgs[0]["is_error"] == 1 and msgs[0]["content"].startswith(
        't_env is in the tool catalogue but not active: call activate_tool with {"name": "t_env"}'
    )
    assert "t_pid" not in msgs[1]["content"] and "t_append:" in msgs[1]["content"]
    assert (
        msgs[2]["is_error"] == 1 and "no tool 't_pid' in the tool catalogue" in msgs[2]["content"]
    )
    assert (msgs[4]["content"], msgs[4]["is_error"]) == ("appended", 0)
    assert out.read_text() == "one\n"
    assert effects == [{"tool": "t.append", "state": "completed"}]
    assert msgs[6]["is_error"] == 1 and msgs[6]["content"].startswith("denied by the approver")


async def test_a_resumed_run_sends_the_tools_it_activated_before_it_was_stopped(
    tmp_path: Path,
) -> None:
    gate, started = tmp_path / "gate", tmp_path / "started"
    b = bundle(
        call("activate_tool", name="t_wait_for_gate"),
        call("t_wait_for_gate", gate=str(gate), started=str(started)),
        {"text": "done"},
    )
    store = await SQLiteStore.open(tmp_path / "agen.db")
    old, _ = await capturing(store, b, owner="host-a")
    new, cap = await capturing(store, b, owner="host-b")
    first = asyncio.create_task(old.run(RunRequest(input="go", task_id="t-1")))
    try:
        assert await eventually(started.exists, within_s=30)  # the activated tool is in its call
        second = asyncio.create_task(new.run(RunRequest(input="go", task_id="t-1", attempt=2)))
        # the resumed run repeats the call (idempotent): once it has, both calls may go on
        assert await eventually(lambda: len(started.read_text().splitlines()) == 2, within_s=30)
        gate.touch()
        res = await second
        assert res.resumed and res.epoch == 2 and res.outcome.summary == "done"
        # the new owner never saw activate_tool run: the checkpoint's history told it
        sent = names(cap.requests[0].tools)
        assert "t_wait_for_gate" in sent and "t_echo" not in sent
        msgs = await tool_messages(store, res.run_id)
        assert msgs[-1]["name"] == "t_wait_for_gate" and msgs[-1]["content"] == "through the gate"
        with pytest.raises((FencedError, asyncio.CancelledError)):
            first.cancel()
            await first
    finally:
        if not first.done():
            first.cancel()
        await old.close()
        await new.close()
        await store.close()
