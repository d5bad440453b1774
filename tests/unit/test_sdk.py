from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import agen
from agen.errors import ReentrantError, UnavailableError
from agen.runner.policy import ApprovalRequest, ToolPolicy, Verdict
from agen.runner.tools.base import Tool, ToolContext
from agen.sdk import Agent
from agen.store import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]


def scripted(*turns: dict[str, Any]) -> dict[str, Any]:
    return {"fake": {"script": list(turns)}}


async def test_a_fake_bundle_runs_end_to_end_through_the_sdk_and_is_recorded(
    tmp_path: Path,
) -> None:
    db = tmp_path / "sdk.db"
    async with agen.Agent.from_bundle(ROOT / "bundles" / "hello", store=db) as agent:
        result = await agent.run("hi there", task_id="sdk-1")
    assert result.status == "succeeded" and result.outcome.status == "done"
    assert result.outcome.summary.startswith("Hello! I'm hello")
    store = await SQLiteStore.open(db)
    run = await store.one(
        "SELECT deployment, source, outcome, turns FROM runs WHERE task_id = 'sdk-1'"
    )
    assert (
        run is not None
        and run["deployment"] == "hello"
        and run["source"] == "sdk"
        and run["turns"] == 1
    )
    assert json.loads(run["outcome"])["status"] == "done"
    assert await store.scalar("SELECT COUNT(*) FROM messages") == 2
    assert await store.scalar("SELECT COUNT(*) FROM spans") == 2
    assert await store.scalar("SELECT COUNT(*) FROM usage") == 1
    await store.close()


async def test_host_functions_become_tools_with_schemas_from_type_hints(tmp_path: Path) -> None:
    seen: list[tuple[str, int, str]] = []

    def add_item(name: str, qty: int = 1) -> str:
        """Add an item to the basket."""
        seen.append((name, qty, threading.current_thread().name))
        return f"added {qty} x {name}"

    turns: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "add_item", "arguments": {"name": "tea", "qty": 2}}]},
        {"toolCalls": [{"name": "add_item", "arguments": {"qty": "lots"}}]},
        {"text": "basket ready"},
    ]
    agent = Agent(
        name="shop",
        instructions="Shop.",
        provider="fake",
        harness=scripted(*turns),
        tools=[add_item],
        store=tmp_path / "a.db",
    )
    res = await agent.run("buy tea")
    tool = agent._host_tools[0]
    assert tool.input_schema["properties"]["qty"] == {
        "default": 1,
        "title": "Qty",
        "type": "integer",
    }
    assert (
        tool.input_schema["required"] == ["name"]
        and tool.description == "Add an item to the basket."
    )
    assert res.outcome.summary == "basket ready"
    assert [(n, q) for n, q, _ in seen] == [("tea", 2)] and seen[0][2].startswith("agen-sdk-shop")
    await agent.close()


class AskAll(ToolPolicy):
    def visible(self, tool: Tool) -> bool:
        return True

    async def check(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Verdict:
        return Verdict("ask", "ask everything")


async def test_the_approval_callback_decides_asks(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    def approve(req: ApprovalRequest) -> bool:
        asked.append(req)
        return bool(req.arguments.get("amount", 0) < 100)

    def pay(amount: int) -> str:
        return f"paid {amount}"

    turns: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "pay", "arguments": {"amount": 10}}]},
        {"toolCalls": [{"name": "pay", "arguments": {"amount": 500}}]},
        {"text": "done"},
    ]
    agent = Agent(
        provider="fake",
        harness=scripted(*turns),
        tools=[pay],
        approve=approve,
        policy=AskAll(),
        store=tmp_path / "a.db",
    )
    res = await agent.run("pay")
    assert [a.arguments for a in asked] == [{"amount": 10}, {"amount": 500}]
    store = agent._store
    assert store is not None
    rows = await store.all(
        "SELECT content FROM messages WHERE run_id = ? AND role = 'tool' ORDER BY seq",
        (res.run_id,),
    )
    assert [r["content"] for r in rows] == ["paid 10", "denied by the approver"]
    await agent.close()


async def test_stream_yields_events_in_order_ending_with_the_outcome(tmp_path: Path) -> None:
    def look() -> str:
        return "seen"

    turns: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "look", "arguments": {}}]},
        {"text": "finished looking"},
    ]
    delivered: list[str] = []
    agent = Agent(
        provider="fake",
        harness=scripted(*turns),
        tools=[look],
        store=tmp_path / "a.db",
        on_event=lambda e: delivered.append(e["type"]),
    )
    events = [e async for e in agent.stream("look")]
    expected = [
        *("model.started", "model.finished", "assistant"),
        *("tool.started", "tool.finished", "tool_result"),
        *("model.started", "run.delta", "run.delta", "model.finished", "assistant", "finished"),
    ]
    assert [e["type"] for e in events] == expected
    # the answer streams word by word before its turn is recorded whole
    assert [e["text"] for e in events if e["type"] == "run.delta"] == ["finished ", "looking"]
    assert events[4] == {
        **events[4],
        "turn": 1,
        "call_id": "call_0_0",
        "tool": "look",
        "status": "ok",
    }
    assert events[-1]["outcome"]["summary"] == "finished looking"
    assert delivered == expected
    await agent.close()


async def test_run_from_inside_a_callback_is_rejected_as_reentrant(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    agent: Agent

    async def nested() -> str:
        try:
            await agent.run("inner")
        except ReentrantError as e:
            errors.append(e)
        return "tried"

    def nested_sync() -> str:
        try:
            asyncio.run(agent.run("inner"))
        except ReentrantError as e:
            errors.append(e)
        return "tried"

    turns: list[dict[str, Any]] = [
        {
            "toolCalls": [
                {"name": "nested", "arguments": {}},
                {"name": "nested_sync", "arguments": {}},
            ]
        },
        {"text": "ok"},
    ]
    agent = Agent(
        provider="fake",
        harness=scripted(*turns),
        tools=[nested, nested_sync],
        store=tmp_path / "a.db",
    )
    assert (await agent.run("go")).status == "succeeded"
    assert len(errors) == 2 and all(e.code == "reentrant" for e in errors)  # type: ignore[attr-defined]
    await agent.close()


async def test_close_cancels_running_runs_fails_pending_host_calls_and_rejects_new_runs(
    tmp_path: Path,
) -> None:
    started = threading.Event()
    release = threading.Event()

    def block() -> str:
        started.set()
        release.wait(10)
        return "late"

    def never() -> str:
        return "should not run"

    turns: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "block", "arguments": {}}]},
        {"text": "never"},
    ]
    agent = Agent(
        provider="fake", harness=scripted(*turns), tools=[block, never], store=tmp_path / "a.db"
    )
    runs = [asyncio.create_task(agent.run("go", conversation_key=f"c{i}")) for i in range(2)]
    await asyncio.to_thread(started.wait, 5)
    await asyncio.sleep(0.05)
    await asyncio.wait_for(agent.close(), 5)
    release.set()
    results = await asyncio.gather(*runs)
    assert [r.status for r in results] == ["cancelled", "cancelled"]
    with pytest.raises(UnavailableError, match="closed"):
        await agent.run("again")


async def test_cancelling_a_run_through_an_event_ends_it_cancelled(tmp_path: Path) -> None:
    async def wait_long() -> str:
        await asyncio.sleep(30)
        return "x"

    turns: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "wait_long", "arguments": {}}]},
        {"text": "never"},
    ]
    agent = Agent(
        provider="fake", harness=scripted(*turns), tools=[wait_long], store=tmp_path / "a.db"
    )
    cancel = asyncio.Event()
    task = asyncio.create_task(agent.run("go", cancel=cancel))
    await asyncio.sleep(0.1)
    cancel.set()
    assert (await asyncio.wait_for(task, 5)).outcome.status == "cancelled"
    await agent.close()


def test_importing_agen_does_not_load_the_engine() -> None:
    import subprocess
    import sys

    code = "import sys, agen; print('agen.runner.loop' in sys.modules, 'httpx' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "False"]
