"""The openai provider and the model-turn rules against a real local OpenAI-compatible server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agen.runner.providers.base import ModelRequest
from agen.runner.providers.openai import OpenAIProvider
from agen.runner.turn import TurnPolicy
from agen.runner.types import RunRequest
from agen.store import SQLiteStore
from agen.testing.openai_server import OpenAIServer, Reply, cut_off, empty
from tests.runner_helpers import FnTool, echo, make, runner

# SQLite only: the provider is under test here, the Store only records its usage.
pytestmark = pytest.mark.sqlite_only


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def harness(srv: OpenAIServer, **extra: Any) -> dict[str, Any]:
    return {"provider": "openai", "model": "m1", "baseUrl": srv.base_url, "maxRetries": 2, **extra}


async def spans(store: SQLiteStore, run_id: str) -> list[dict[str, Any]]:
    rows = await store.all(
        "SELECT status, attrs, error FROM spans WHERE run_id = ? AND name = 'gen_ai.chat'"
        " ORDER BY started_ms, id",
        (run_id,),
    )
    return [{**r, "attrs": json.loads(r["attrs"])} for r in rows]


async def test_tool_calls_usage_and_reported_cost_are_recorded(
    srv: OpenAIServer, store: SQLiteStore
) -> None:
    srv.script(
        Reply(
            text=None,
            tool_calls=[{"name": "notes_add", "arguments": {"text": "hi"}}],
            prompt_tokens=120,
            completion_tokens=7,
            cached_tokens=100,
            cost=0.002,
        ),
        Reply(text="noted", prompt_tokens=140, completion_tokens=3, cost=0.001),
    )
    tool = FnTool(
        "notes.add", echo, schema={"type": "object", "properties": {"text": {"type": "string"}}}
    )
    res = await runner(store, make(harness(srv)), tool).run(RunRequest(input="note hi"))
    assert res.outcome.summary == "noted" and tool.calls == [{"text": "hi"}]
    body = srv.requests[0]
    assert body["tools"][-1]["function"]["name"] == "notes_add" and body["max_tokens"] == 8192
    assert "max_completion_tokens" not in body
    assert srv.requests[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1_0",
        "content": "echo {'text': 'hi'}",
    }
    run = await store.one(
        "SELECT input_tokens, output_tokens, cached_tokens, cost_usd FROM runs WHERE id = ?",
        (res.run_id,),
    )
    assert run == {
        "input_tokens": 260,
        "output_tokens": 10,
        "cached_tokens": 100,
        "cost_usd": pytest.approx(0.003),
    }
    s = await spans(store, res.run_id)
    assert (
        s[0]["attrs"]["gen_ai.usage.cache_read.input_tokens"] == 100
        and s[0]["attrs"]["agen.cost_usd"] == 0.002
    )


async def test_429_is_retried_after_the_time_retry_after_names(
    srv: OpenAIServer, store: SQLiteStore
) -> None:
    srv.script(Reply(status=429, retry_after="2"), Reply(text="finally"))
    sleeps = Sleeps()
    r = runner(store, make(harness(srv)), turn_policy=TurnPolicy(max_retries=2, sleep=sleeps))
    res = await r.run(RunRequest(input="x"))
    assert res.outcome.summary == "finally" and sleeps.delays == [2.0]
    s = await spans(store, res.run_id)
    assert [x["status"] for x in s] == ["error", "ok"] and s[1]["attrs"]["agen.retry"] == 1


async def test_a_server_error_is_retried_with_backoff_then_succeeds(
    srv: OpenAIServer, store: SQLiteStore
) -> None:
    srv.script(Reply(status=500), Reply(status=503), Reply(text="ok now"))
    sleeps = Sleeps()
    r = runner(
        store,
        make(harness(srv)),
        turn_policy=TurnPolicy(max_retries=2, backoff_base_s=0.5, sleep=sleeps),
    )
    res = await r.run(RunRequest(input="x"))
    assert (
        res.outcome.summary == "ok now" and sleeps.delays == [0.5, 1.0] and len(srv.requests) == 3
    )


async def test_a_fallback_model_answers_when_the_first_keeps_failing(
    srv: OpenAIServer, store: SQLiteStore
) -> None:
    srv.script(
        *[Reply(status=500, for_model="m1")] * 3,
        Reply(text="from m2", for_model="m2", model="m2-0613"),
    )
    r = runner(store, make(harness(srv, fallbackModels=["m2"])))
    res = await r.run(RunRequest(input="x"))
    assert res.outcome.summary == "from m2"
    assert [b["model"] for b in srv.requests] == ["m1", "m1", "m1", "m2"]
    last = (await spans(store, res.run_id))[-1]["attrs"]
    assert last["agen.fallback"] == "m2" and last["gen_ai.response.model"] == "m2-0613"
    assert last["gen_ai.request.model"] == "m2"


async def test_an_account_error_fails_the_run_at_once_without_retrying(
    srv: OpenAIServer, store: SQLiteStore
) -> None:
    srv.script(Reply(status=401, error="invalid api key"))
    res = await runner(store, make(harness(srv, fallbackModels=["m2"]))).run(RunRequest(input="x"))
    assert res.status == "failed" and res.outcome.reason == "account_error"
    assert "401" in res.outcome.summary and len(srv.requests) == 1


async def test_an_account_error_moves_to_the_fallback_provider(
    srv: OpenAIServer, store: SQLiteStore
) -> None:
    async with OpenAIServer() as backup:
        srv.script(Reply(status=402, error="no credit"))
        backup.script(Reply(text="from the backup account"))
        fb = [{"provider": "openai", "model": "b1", "baseUrl": backup.base_url}]
        res = await runner(store, make(harness(srv, fallbackProviders=fb))).run(
            RunRequest(input="x")
        )
    assert res.outcome.summary == "from the backup account"
    assert len(srv.requests) == 1 and backup.requests[0]["model"] == "b1"
    last = (await spans(store, res.run_id))[-1]["attrs"]
    assert last["agen.fallback_provider"] == "openai" and last["gen_ai.request.model"] == "b1"


async def test_a_transient_failure_never_moves_to_the_fallback_provider(
    srv: OpenAIServer, store: SQLiteStore
) -> None:
    async with OpenAIServer() as backup:
        srv.default = Reply(status=500)
        fb = [{"provider": "openai", "model": "b1", "baseUrl": backup.base_url}]
        res = await runner(store, make(harness(srv, maxRetries=1, fallbackProviders=fb))).run(
            RunRequest(input="x")
        )
        assert res.outcome.reason == "no_answer" and not backup.requests


async def test_an_empty_answer_is_asked_again_once(srv: OpenAIServer, store: SQLiteStore) -> None:
    srv.script(empty(), Reply(text="second try"))
    res = await runner(store, make(harness(srv))).run(RunRequest(input="x"))
    assert res.outcome.summary == "second try" and len(srv.requests) == 2


async def test_a_cut_off_answer_is_asked_again_with_twice_the_limit(
    srv: OpenAIServer, store: SQLiteStore
) -> None:
    srv.script(cut_off(""), Reply(text="complete"))
    res = await runner(store, make(harness(srv, maxOutputTokens=300))).run(RunRequest(input="x"))
    assert res.outcome.summary == "complete"
    assert [b["max_tokens"] for b in srv.requests] == [300, 600]


async def test_no_answer_from_any_model_fails_the_run(
    srv: OpenAIServer, store: SQLiteStore
) -> None:
    srv.default = empty()
    res = await runner(store, make(harness(srv, fallbackModels=["m2"]))).run(RunRequest(input="x"))
    assert res.status == "failed" and res.outcome.reason == "no_answer"
    assert [b["model"] for b in srv.requests] == ["m1", "m1", "m2", "m2"]


async def test_direct_openai_gets_max_completion_tokens_and_reasoning_effort() -> None:
    direct = OpenAIProvider(api_key="k", model="gpt-x")
    other = OpenAIProvider(api_key=None, model="llama", base_url="http://127.0.0.1:1/v1")
    req = ModelRequest(model="", messages=[], max_tokens=50, reasoning_effort="low")
    assert direct.body(req)["max_completion_tokens"] == 50 and "max_tokens" not in direct.body(req)
    assert other.body(req)["max_tokens"] == 50 and direct.body(req)["reasoning_effort"] == "low"
    await direct.aclose()
    await other.aclose()


async def test_the_api_key_comes_from_the_declared_secret_and_is_redacted(
    srv: OpenAIServer, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "sk-very-secret-123")
    srv.script(Reply(text="the key is sk-very-secret-123"))
    b = make(
        harness(srv, apiKeySecret="MY_KEY"),
        files={"x-agen/secrets.json": {"secrets": {"MY_KEY": {"source": "env"}}}},
    )
    res = await runner(store, b).run(RunRequest(input="x"))
    assert srv.headers[0]["authorization"] == "Bearer sk-very-secret-123"
    stored = await store.one(
        "SELECT content FROM messages WHERE run_id = ? AND role = 'assistant'", (res.run_id,)
    )
    assert (
        stored == {"content": "the key is [REDACTED]"}
        and res.outcome.summary == "the key is [REDACTED]"
    )


async def test_a_provider_keeps_at_most_max_in_flight_calls_at_the_server(
    srv: OpenAIServer,
) -> None:
    """More calls than maxInFlight wait inside agen (not in httpx's pool) until one returns."""
    import asyncio

    provider = OpenAIProvider(api_key=None, model="m1", base_url=srv.base_url, max_in_flight=3)
    srv.gate.clear()  # the server holds every answer: only what the provider lets through arrives
    request = ModelRequest(model="m1", messages=[{"role": "user", "content": "hi"}])
    calls = [asyncio.create_task(provider.complete(request)) for _ in range(8)]
    for _ in range(3000):  # up to 30 s
        if srv.in_flight == 3 and provider.waiting == 5:
            break
        await asyncio.sleep(0.01)
    srv.gate.set()
    answers = await asyncio.gather(*calls)
    await provider.aclose()
    assert len(answers) == 8 and len(srv.requests) == 8
    assert srv.peak_in_flight == 3 and provider.waiting == 0


async def test_harness_max_in_flight_reaches_every_http_provider_it_builds(
    srv: OpenAIServer,
) -> None:
    from agen.runner.providers import build_accounts

    bundle = make(
        harness(
            srv,
            maxInFlight=7,
            fallbackProviders=[{"provider": "openai", "model": "m2", "baseUrl": srv.base_url}],
        )
    )
    accounts = await build_accounts(bundle)
    assert [getattr(a.provider, "max_in_flight", None) for a in accounts] == [7, 7]
    for a in accounts:
        await a.provider.aclose()
