"""The anthropic provider against a strict local Messages API stub (tests/anthropic_server.py): every
request is checked against the `anthropic` SDK's request types and the API's rules, and no test
passes with an invalid request."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agen.errors import BundleError
from agen.runner.context import MessageRow, Msg
from agen.runner.providers.base import ModelRequest
from agen.runner.providers.openai import OpenAIProvider
from agen.runner.providers.prices import claude_cost
from agen.runner.turn import TurnPolicy
from agen.runner.types import RunRequest
from agen.store import SQLiteStore
from tests.anthropic_server import AnthropicServer, Reply
from tests.runner_helpers import FnTool, echo, make, runner

pytestmark = pytest.mark.sqlite_only  # the provider is under test; the Store only records usage

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


@pytest.fixture
async def api() -> AsyncIterator[AnthropicServer]:
    async with AnthropicServer() as server:
        yield server
    assert server.invalid == [], server.invalid  # 0 invalid requests, in every test


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def harness(api: AnthropicServer, **extra: Any) -> dict[str, Any]:
    return {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "baseUrl": api.base_url,
        "maxRetries": 2,
        **extra,
    }


def tools() -> tuple[FnTool, FnTool]:
    return FnTool("notes.add", echo, schema=SCHEMA), FnTool("notes.find", echo, schema=SCHEMA)


async def test_parallel_tool_use_over_several_turns_with_cache_marks_usage_and_cost(
    api: AnthropicServer, store: SQLiteStore
) -> None:
    api.script(
        Reply(
            text="two at once",
            tool_calls=[
                {"name": "notes_add", "arguments": {"text": "a"}},
                {"name": "notes_find", "arguments": {"text": "b"}},
            ],
            input_tokens=100,
            cache_creation=1000,
            output_tokens=10,
        ),
        Reply(
            text=None,
            tool_calls=[{"name": "notes_add", "arguments": {"text": "c"}}],
            input_tokens=50,
            cache_read=1000,
            cache_creation=80,
            output_tokens=8,
        ),
        Reply(text="all noted", input_tokens=20, cache_read=1080, output_tokens=4),
    )
    add, find = tools()
    res = await runner(store, make(harness(api)), add, find).run(RunRequest(input="note"))
    assert res.outcome.summary == "all noted"
    assert add.calls == [{"text": "a"}, {"text": "c"}] and find.calls == [{"text": "b"}]
    first, second, third = api.requests
    # system, tools and the newest message carry the cache breakpoints
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    named = {t["name"]: t for t in first["tools"]}
    assert named["notes_add"]["input_schema"] == SCHEMA and "notes_find" in named
    assert first["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["max_tokens"] == 8192 and "tool_choice" not in first
    # both results of the parallel turn in one user message, answering the two tool_use ids
    sent_back, results = second["messages"][-2:]
    assert sent_back["role"] == "assistant"
    assert [b["type"] for b in sent_back["content"]] == ["text", "tool_use", "tool_use"]
    assert results["role"] == "user"
    assert [(b["type"], b["tool_use_id"]) for b in results["content"]] == [
        ("tool_result", "toolu_1_0"),
        ("tool_result", "toolu_1_1"),
    ]
    assert results["content"][0]["content"] == "echo {'text': 'a'}"
    assert results["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert len(third["messages"]) == 5  # user, assistant, results, assistant, result
    run = await store.one(
        "SELECT input_tokens, output_tokens, cached_tokens, cost_usd FROM runs WHERE id = ?",
        (res.run_id,),
    )
    # Sonnet 4.5: $3 input, $3.75 cache writes, $0.30 cache reads, $15 output per million
    cost = (170 * 3 + 1080 * 3.75 + 2080 * 0.30 + 22 * 15) / 1_000_000
    assert run == {
        "input_tokens": 1100 + 1130 + 1100,  # fresh + written + read: all the input
        "output_tokens": 22,
        "cached_tokens": 2080,
        "cost_usd": pytest.approx(cost),
    }
    span = await store.one(
        "SELECT attrs FROM spans WHERE run_id = ? AND name = 'gen_ai.chat' ORDER BY started_ms, id",
        (res.run_id,),
    )
    assert span is not None
    attrs = json.loads(span["attrs"])
    assert attrs["gen_ai.provider.name"] == "anthropic"
    assert attrs["gen_ai.usage.cache_creation.input_tokens"] == 1000
    assert attrs["gen_ai.response.finish_reasons"] == ["tool_calls"]


async def test_cache_marks_are_left_out_where_the_harness_turns_them_off(
    api: AnthropicServer, store: SQLiteStore
) -> None:
    api.script(Reply(tool_calls=[{"name": "notes_add", "arguments": {"text": "a"}}]), Reply())
    off = {"cache": {"system": False, "tools": True, "history": False}}
    add, _ = tools()
    await runner(store, make(harness(api, anthropic=off)), add).run(RunRequest(input="x"))
    for body in api.requests:
        assert "cache_control" not in body["system"][-1]
        assert "cache_control" in body["tools"][-1]
        assert all("cache_control" not in b for m in body["messages"] for b in m["content"])


async def test_thinking_blocks_go_back_unchanged_and_are_kept_in_the_checkpoint(
    api: AnthropicServer, store: SQLiteStore
) -> None:
    api.script(
        Reply(
            text=None,
            thinking="I should note it first.",
            tool_calls=[{"name": "notes_add", "arguments": {"text": "a"}}],
        ),
        Reply(text="noted", thinking="Done, say so."),
    )
    add, _ = tools()
    b = make(harness(api, anthropic={"thinkingBudget": 2048}, maxOutputTokens=4096))
    res = await runner(store, b, add).run(RunRequest(input="note a"))
    assert res.outcome.summary == "noted"
    first, second = api.requests
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    turn = second["messages"][-2]["content"]
    assert turn[0] == {
        "type": "thinking",
        "thinking": "I should note it first.",
        "signature": "sig-1-0",
    }
    assert turn[1]["type"] == "tool_use"
    # the checkpoint keeps them: a run resumed from the Store sends the same blocks
    row = await store.row(
        MessageRow,
        "SELECT seq, turn, role, content, run_id, tool_calls, tool_call_id, name, is_error, model,"
        " raw FROM messages WHERE run_id = ? AND role = 'assistant' ORDER BY seq",
        (res.run_id,),
    )
    assert row is not None
    assert Msg.of(row).wire()["thinking_blocks"] == [turn[0]]


async def test_a_529_and_a_429_are_retried_after_the_time_retry_after_names(
    api: AnthropicServer, store: SQLiteStore
) -> None:
    api.script(
        Reply(status=529, retry_after="1", error_type="overloaded_error"),
        Reply(status=429, retry_after="3", error_type="rate_limit_error"),
        Reply(text="finally"),
    )
    sleeps = Sleeps()
    r = runner(store, make(harness(api)), turn_policy=TurnPolicy(max_retries=2, sleep=sleeps))
    res = await r.run(RunRequest(input="x"))
    assert res.outcome.summary == "finally" and sleeps.delays == [1.0, 3.0]
    spans = await store.all(
        "SELECT status, error FROM spans WHERE run_id = ? AND name = 'gen_ai.chat'"
        " ORDER BY started_ms, id",
        (res.run_id,),
    )
    assert [s["status"] for s in spans] == ["error", "error", "ok"]
    assert "HTTP 529" in spans[0]["error"] and "overloaded_error" in spans[0]["error"]


async def test_a_max_tokens_stop_is_asked_again_with_twice_the_limit(
    api: AnthropicServer, store: SQLiteStore
) -> None:
    api.script(Reply(text=None, stop_reason="max_tokens"), Reply(text="complete"))
    res = await runner(store, make(harness(api, maxOutputTokens=300))).run(RunRequest(input="x"))
    assert res.outcome.summary == "complete"
    assert [b["max_tokens"] for b in api.requests] == [300, 600]


async def test_a_refusal_ends_the_run_saying_the_model_declined(
    api: AnthropicServer, store: SQLiteStore
) -> None:
    api.default = Reply(text=None, stop_reason="refusal")
    res = await runner(store, make(harness(api))).run(RunRequest(input="x"))
    assert res.status == "failed" and res.outcome.reason == "no_answer"
    assert "declined to answer (stop_reason refusal)" in res.outcome.summary
    assert len(api.requests) == 1  # a refusal is not retried


async def test_an_account_error_fails_at_once_and_the_key_goes_in_x_api_key(
    api: AnthropicServer, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-1")
    api.script(Reply(status=401, error_type="authentication_error"))
    b = make(
        harness(api, apiKeySecret="ANTHROPIC_API_KEY"),
        files={"x-agen/secrets.json": {"secrets": {"ANTHROPIC_API_KEY": {"source": "env"}}}},
    )
    res = await runner(store, b).run(RunRequest(input="x"))
    assert res.status == "failed" and res.outcome.reason == "account_error"
    assert api.headers[0]["x-api-key"] == "sk-ant-secret-1"
    assert api.headers[0]["anthropic-version"] == "2023-06-01"
    assert "authorization" not in api.headers[0]


def test_a_thinking_budget_must_fit_under_the_output_limit_and_rules_out_temperature() -> None:
    with pytest.raises(BundleError) as e:
        make({"provider": "anthropic", "model": "m", "anthropic": {"thinkingBudget": 9000}})
    assert "maxOutputTokens (8192)" in str(e.value.problems)
    with pytest.raises(BundleError) as e:
        make(
            {
                "provider": "anthropic",
                "model": "m",
                "temperature": 0.2,
                "anthropic": {"thinkingBudget": 2048},
            }
        )
    assert "no temperature with extended thinking" in str(e.value.problems)


def test_claude_prices_count_cache_writes_and_reads_and_know_dated_ids() -> None:
    assert claude_cost("claude-haiku-4-5-20251001", 1_000_000, 0, 0, 0) == pytest.approx(1.0)
    assert claude_cost("claude-opus-4-5", 0, 1_000_000, 1_000_000, 1_000_000) == pytest.approx(
        6.25 + 0.5 + 25
    )
    # Haiku 5.5 is priced by prompt length: over 100k tokens every token pays the long rate
    assert claude_cost("claude-haiku-5-5", 50_000, 0, 0, 0) == pytest.approx(0.005)
    assert claude_cost("claude-haiku-5-5", 50_000, 0, 60_000, 0) == pytest.approx(0.028)
    assert claude_cost("claude-unknown-9", 10, 0, 0, 0) is None


async def test_an_openai_fallback_gets_no_thinking_blocks() -> None:
    """A run that moved from anthropic to an OpenAI-compatible account sends its history without
    the thinking blocks, which are no chat-completions field."""
    provider = OpenAIProvider(api_key=None, model="m", base_url="http://127.0.0.1:1/v1")
    turn = {"role": "assistant", "content": "hi", "thinking_blocks": [{"type": "thinking"}]}
    body = provider.body(ModelRequest(model="m", messages=[{"role": "user", "content": "x"}, turn]))
    await provider.aclose()
    assert body["messages"][1] == {"role": "assistant", "content": "hi"}


async def test_auto_builds_anthropic_on_its_key_and_a_missing_key_says_which_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agen.errors import InvalidError
    from agen.runner.providers import build_accounts
    from agen.runner.providers.anthropic import AnthropicProvider

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-auto")
    (account,) = await build_accounts(make({"provider": "auto"}))
    assert account.label == "anthropic" and account.key_secret == "ANTHROPIC_API_KEY"
    assert isinstance(account.provider, AnthropicProvider)
    assert account.provider.api_key == "sk-ant-auto"
    assert account.account_id("ns") == "ns/anthropic:ANTHROPIC_API_KEY"  # what a hold is kept on
    await account.provider.aclose()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(InvalidError) as e:
        await build_accounts(make({"provider": "anthropic", "model": "claude-haiku-4-5"}))
    assert "export ANTHROPIC_API_KEY=" in str(e.value)


async def test_the_history_breakpoint_skips_the_late_budget_note() -> None:
    """The note after the history changes every call: the breakpoint goes on the block before it."""
    from agen.runner.providers.anthropic import AnthropicProvider

    provider = AnthropicProvider(
        api_key=None, model="claude-haiku-4-5", base_url="http://127.0.0.1:1"
    )
    call = {"id": "toolu_1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": "you are terse"},
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "seen"},
        {"role": "system", "content": "Budget: half the turns are used."},
    ]
    body = provider.body(ModelRequest(model="", messages=chat))
    await provider.aclose()
    result, note = body["messages"][-1]["content"]
    assert result["type"] == "tool_result" and result["cache_control"] == {"type": "ephemeral"}
    assert note == {"type": "text", "text": "Budget: half the turns are used."}
    assert body["system"] == [
        {"type": "text", "text": "you are terse", "cache_control": {"type": "ephemeral"}}
    ]


async def test_a_run_resumed_from_the_store_sends_the_checkpointed_thinking_back(
    api: AnthropicServer, store: SQLiteStore
) -> None:
    """The owner dies in the tool call after a thinking turn; the run resumed elsewhere reads that
    turn from the Store and sends its signed thinking block back (the stub refuses the call
    without it, as the API does)."""
    import asyncio

    from agen.errors import FencedError

    started = asyncio.Event()
    calls: list[str] = []

    async def put(args: dict[str, Any]) -> str:
        calls.append("put")
        if len(calls) == 1:
            started.set()
            await asyncio.sleep(30)  # the first owner never finishes it
        return "stored"

    api.script(
        Reply(text=None, thinking="Store it.", tool_calls=[{"name": "put", "arguments": {}}]),
        Reply(text="ok"),
    )
    b = make(harness(api, anthropic={"thinkingBudget": 1024}))
    tool = FnTool("put", put, side_effect=True, idempotent=True)
    old = runner(store, b, tool, owner="a")
    task = asyncio.create_task(old.run(RunRequest(input="go", task_id="t-think")))
    await started.wait()
    res = await runner(
        store, b, FnTool("put", put, side_effect=True, idempotent=True), owner="b"
    ).run(RunRequest(input="go", task_id="t-think"))
    task.cancel()
    with pytest.raises((asyncio.CancelledError, FencedError)):
        await task
    assert res.outcome.summary == "ok" and calls == ["put", "put"]
    resumed = api.requests[-1]["messages"][-2]["content"]
    assert resumed[0] == {"type": "thinking", "thinking": "Store it.", "signature": "sig-1-0"}
