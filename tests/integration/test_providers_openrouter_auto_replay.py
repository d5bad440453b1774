"""OpenRouter extras and routing tiers, provider auto, and record-then-replay, on local servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agen.bundle.harness import Router
from agen.runner.providers import auto, build_accounts
from agen.runner.providers.openrouter import route_tier
from agen.runner.types import RunRequest
from agen.store import SQLiteStore
from agen.testing.openai_server import OpenAIServer, Reply
from tests.runner_helpers import Capturing, FnTool, echo, make, runner

# SQLite only: the provider is under test here, the Store only records its usage.
pytestmark = pytest.mark.sqlite_only


async def test_openrouter_merges_extras_sends_reasoning_effort_and_counts_cost(
    store: SQLiteStore,
) -> None:
    async with OpenAIServer() as srv:
        srv.script(Reply(text="routed", cost=0.25, model="anthropic/claude-x"))
        h = {
            "provider": "openrouter",
            "model": "openrouter/auto",
            "baseUrl": srv.base_url,
            "reasoningEffort": "high",
            "openrouter": {"provider": {"sort": "price"}, "plugins": [{"id": "web"}]},
            "router": {"tier": "xhigh", "maxTier": "high", "allowedModels": ["anthropic/*"]},
        }
        res = await runner(store, make(h, {"limits": {"maxUsdPerRun": 10}})).run(
            RunRequest(input="x", model_tier="max")
        )
        body = srv.requests[0]
    assert body["provider"] == {"sort": "price"} and body["reasoning"] == {"effort": "high"}
    assert "reasoning_effort" not in body and body["usage"] == {"include": True}
    assert body["plugins"] == [
        {"id": "web"},
        {"id": "auto-router", "cost_tier": "high", "allowed_models": ["anthropic/*"]},
    ]
    run = await store.one("SELECT cost_usd FROM runs WHERE id = ?", (res.run_id,))
    assert run == {"cost_usd": 0.25}
    span = await store.one(
        "SELECT attrs FROM spans WHERE run_id = ? AND name = 'gen_ai.chat'", (res.run_id,)
    )
    assert span is not None and json.loads(span["attrs"])["agen.router.tier"] == "high"


def test_routing_tier_follows_the_task_then_the_router_capped_and_lowered_under_budget_pressure() -> (
    None
):
    r = Router(tier="medium", max_tier="high", budget_tier="low")
    assert route_tier("openrouter/auto", None, r, False) == "medium"
    assert route_tier("openrouter/auto", "max", r, False) == "high"
    assert (
        route_tier("typesafe/jev-router", "xhigh", None, False) == "high"
    )  # the router's top tier
    assert route_tier("openrouter/auto", "high", r, True) == "low"
    assert route_tier("openai/gpt-4o", "high", r, False) is None


async def test_auto_prefers_an_api_key_then_ollama_then_the_offline_fake(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async with OpenAIServer(ollama_models=["qwen3:4b", "llama3.2"]) as ollama:
        monkeypatch.setenv("AGEN_OLLAMA_URL", ollama.url)
        choice = await auto.choose("llama3.2")
        assert (choice.provider, choice.model, choice.base_url) == (
            "openai",
            "llama3.2",
            ollama.base_url,
        )
        assert (await auto.choose("gpt-4o")).model == "qwen3:4b"
        monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
        assert (await auto.choose(None)).provider == "openrouter"
        monkeypatch.setenv("OPENAI_API_KEY", "oa-key")
        assert (await auto.choose(None)).provider == "openai"
        monkeypatch.setenv("ANTHROPIC_API_KEY", "an-key")
        # Anthropic, OpenAI, OpenRouter, then Ollama (docs/providers.md)
        first = await auto.choose(None)
        assert (first.provider, first.model) == ("anthropic", auto.ANTHROPIC_MODEL)
        assert (await auto.choose("claude-haiku-4-5")).provider == "anthropic"
        # an OpenAI model goes to the OpenAI key, or to a Claude model when it is the only key
        assert (await auto.choose("gpt-4o-mini")).provider == "openai"
        monkeypatch.delenv("OPENAI_API_KEY")
        monkeypatch.delenv("OPENROUTER_API_KEY")
        alone = await auto.choose("gpt-4o-mini")
        assert (alone.provider, alone.model) == ("anthropic", auto.ANTHROPIC_MODEL)
        assert "gpt-4o-mini is no Claude model" in alone.why
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("AGEN_OLLAMA_URL", "http://127.0.0.1:9")  # nothing listens there
    auto._said.clear()
    accounts = await build_accounts(make({"provider": "auto"}))
    assert accounts[0].label == "fake"
    assert "provider auto chose fake" in capsys.readouterr().err


async def test_auto_runs_on_a_local_ollama(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with OpenAIServer(ollama_models=["llama3.2"]) as ollama:
        monkeypatch.setenv("AGEN_OLLAMA_URL", ollama.url)
        ollama.script(Reply(text="hi from ollama"))
        res = await runner(store, make({"provider": "auto", "model": "llama3.2"})).run(
            RunRequest(input="x")
        )
    assert res.outcome.summary == "hi from ollama" and ollama.requests[0]["model"] == "llama3.2"


async def test_a_recorded_run_replays_offline_from_its_cassette(
    store: SQLiteStore, tmp_path: Path
) -> None:
    async with OpenAIServer() as srv:
        srv.script(
            Reply(text=None, tool_calls=[{"name": "look", "arguments": {"q": 1}}]),
            Reply(text="recorded"),
        )
        h = {"provider": "openai", "model": "m1", "baseUrl": srv.base_url}
        res = await runner(store, make(h, {"recordInteractions": True}), FnTool("look", echo)).run(
            RunRequest(input="x")
        )
    row = await store.one("SELECT interactions FROM cassettes WHERE run_id = ?", (res.run_id,))
    assert row is not None
    cassette = {"interactions": json.loads(row["interactions"])}
    assert len(cassette["interactions"]) == 2
    replay = make(
        {"provider": "replay", "cassette": "cassette.json"}, files={"cassette.json": cassette}
    )
    tool = FnTool("look", echo)
    again = await runner(store, replay, tool).run(RunRequest(input="x"))
    assert again.outcome.summary == "recorded" and tool.calls == [{"q": 1}]


class _TieredFake(Capturing):
    """A routing provider that is not OpenRouter: the engine must ask it, not check its name."""

    def route_tier(self, model: str, task_tier: str | None, budget_pressure: bool) -> str | None:
        return f"{task_tier}-for-{model}" + ("-pressed" if budget_pressure else "")


async def test_a_routing_tier_comes_from_the_provider_whatever_its_name(
    store: SQLiteStore,
) -> None:
    b = make()
    accounts = await build_accounts(b)
    cap = _TieredFake(accounts[0].provider)
    accounts[0].provider = cap
    await runner(store, b, accounts=accounts).run(
        RunRequest(input="x", model_tier="high", budget_pressure=True)
    )
    assert [r.tier for r in cap.requests] == ["high-for-fake-pressed"]
