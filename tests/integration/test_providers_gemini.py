"""The gemini provider against a strict local Gemini API stub (tests/gemini_server.py): every
request is checked against the `google-genai` SDK's types and the API's rules, and no test passes
with an invalid request."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agen.runner.context import MessageRow, Msg
from agen.runner.providers.base import THINKING_KEY, ModelRequest
from agen.runner.providers.gemini import FOREIGN_SIGNATURE, GeminiProvider
from agen.runner.providers.prices import gemini_cost
from agen.runner.turn import TurnPolicy
from agen.runner.types import RunRequest
from agen.store import SQLiteStore
from tests.gemini_server import GeminiServer, Reply
from tests.runner_helpers import FnTool, echo, make, runner

pytestmark = pytest.mark.sqlite_only  # the provider is under test; the Store only records usage

SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "additionalProperties": False,
}
MODEL = "gemini-3.5-flash"


@pytest.fixture
async def api() -> AsyncIterator[GeminiServer]:
    async with GeminiServer() as server:
        yield server
    assert server.invalid == [], server.invalid  # 0 invalid requests, in every test


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def harness(api: GeminiServer, **extra: Any) -> dict[str, Any]:
    return {"provider": "gemini", "model": MODEL, "baseUrl": api.base_url, "maxRetries": 3, **extra}


def tools() -> tuple[FnTool, FnTool]:
    return FnTool("notes.add", echo, schema=SCHEMA), FnTool("notes.find", echo, schema=SCHEMA)


async def test_parallel_function_calls_over_several_turns_with_signatures_usage_and_cost(
    api: GeminiServer, store: SQLiteStore
) -> None:
    api.script(
        Reply(
            text="two at once",
            thought="Add a, look for b.",
            tool_calls=[
                {"name": "notes_add", "arguments": {"text": "a"}},
                {"name": "notes_find", "arguments": {"text": "b"}},
            ],
            prompt_tokens=1000,
            cached_tokens=0,
            output_tokens=10,
            thoughts_tokens=40,
        ),
        Reply(
            text=None,
            tool_calls=[{"name": "notes_add", "arguments": {"text": "c"}}],
            prompt_tokens=1100,
            cached_tokens=800,
            output_tokens=8,
        ),
        Reply(text="all noted", prompt_tokens=1200, cached_tokens=1000, output_tokens=4),
    )
    add, find = tools()
    res = await runner(store, make(harness(api)), add, find).run(RunRequest(input="note"))
    assert res.outcome.summary == "all noted"
    assert add.calls == [{"text": "a"}, {"text": "c"}] and find.calls == [{"text": "b"}]
    first, second, third = api.requests
    assert api.paths[0] == f"{MODEL}:streamGenerateContent?alt=sse"  # the runner streams
    assert first["systemInstruction"]["parts"][0]["text"]
    declared = {d["name"]: d for d in first["tools"][0]["functionDeclarations"]}
    assert declared["notes_add"]["parametersJsonSchema"] == SCHEMA  # the schema as it is
    assert first["generationConfig"] == {"maxOutputTokens": 8192}
    # the model turn goes back as it came: thought, text, both calls, the signature on the first
    turn, results = second["contents"][-2:]
    assert turn["role"] == "model"
    assert [sorted(p) for p in turn["parts"]] == [
        ["text", "thought"],
        ["text"],
        ["functionCall", "thoughtSignature"],
        ["functionCall"],
    ]
    assert results["role"] == "user"
    assert [
        (r["functionResponse"]["name"], r["functionResponse"]["id"]) for r in results["parts"]
    ] == [
        ("notes_add", "fc_1_0"),
        ("notes_find", "fc_1_1"),
    ]
    assert results["parts"][0]["functionResponse"]["response"] == {"output": "echo {'text': 'a'}"}
    assert len(third["contents"]) == 5  # user, model, responses, model, response
    run = await store.one(
        "SELECT input_tokens, output_tokens, cached_tokens, cost_usd FROM runs WHERE id = ?",
        (res.run_id,),
    )
    # Gemini 3.5 Flash: $1.50 input, $0.15 cached input, $9 output (thinking included) per million
    cost = ((3300 - 1800) * 1.50 + 1800 * 0.15 + 62 * 9.0) / 1_000_000
    assert run == {
        "input_tokens": 3300,
        "output_tokens": 62,
        "cached_tokens": 1800,
        "cost_usd": pytest.approx(cost),
    }
    span = await store.one(
        "SELECT attrs FROM spans WHERE run_id = ? AND name = 'gen_ai.chat' ORDER BY started_ms, id",
        (res.run_id,),
    )
    assert span is not None
    attrs = json.loads(span["attrs"])
    assert attrs["gen_ai.provider.name"] == "gemini"
    assert attrs["gen_ai.response.finish_reasons"] == ["tool_calls"]
    # the checkpoint keeps the model turn whole: a resumed run sends the same signed parts
    row = await store.row(
        MessageRow,
        "SELECT seq, turn, role, content, run_id, tool_calls, tool_call_id, name, is_error, model,"
        " raw FROM messages WHERE run_id = ? AND role = 'assistant' ORDER BY seq",
        (res.run_id,),
    )
    assert row is not None
    assert Msg.of(row).wire()[THINKING_KEY] == [{"type": "gemini_content", "parts": turn["parts"]}]


async def test_a_429_and_a_503_are_retried_after_retry_after_or_the_retry_info_delay(
    api: GeminiServer, store: SQLiteStore
) -> None:
    api.script(
        Reply(status=503, retry_after="1"),
        Reply(status=429, retry_after="3"),
        Reply(status=429, retry_delay="7s"),  # no header: the body's google.rpc.RetryInfo
        Reply(text="finally"),
    )
    sleeps = Sleeps()
    r = runner(store, make(harness(api)), turn_policy=TurnPolicy(max_retries=3, sleep=sleeps))
    res = await r.run(RunRequest(input="x"))
    assert res.outcome.summary == "finally" and sleeps.delays == [1.0, 3.0, 7.0]
    spans = await store.all(
        "SELECT status, error FROM spans WHERE run_id = ? AND name = 'gen_ai.chat'"
        " ORDER BY started_ms, id",
        (res.run_id,),
    )
    assert [s["status"] for s in spans] == ["error", "error", "error", "ok"]
    assert "HTTP 503" in spans[0]["error"] and "UNAVAILABLE" in spans[0]["error"]


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (Reply(block_reason="SAFETY"), "refused the prompt (SAFETY: Gemini's safety filters"),
        (
            Reply(text="Once upon", finish_reason="RECITATION"),
            "stopped answering (RECITATION: it would recite copyrighted material); it had said: "
            "Once upon",
        ),
        (Reply(text=None, finish_reason="PROHIBITED_CONTENT"), "(PROHIBITED_CONTENT: it is"),
    ],
)
async def test_a_safety_block_ends_the_run_saying_why(
    api: GeminiServer, store: SQLiteStore, reply: Reply, said: str
) -> None:
    api.default = reply
    res = await runner(store, make(harness(api))).run(RunRequest(input="x"))
    assert res.status == "failed" and res.outcome.reason == "no_answer"
    assert said in res.outcome.summary
    assert len(api.requests) == 1  # a block is not retried


async def test_a_max_tokens_stop_is_asked_again_with_twice_the_limit(
    api: GeminiServer, store: SQLiteStore
) -> None:
    api.script(Reply(text=None, finish_reason="MAX_TOKENS"), Reply(text="complete"))
    res = await runner(store, make(harness(api, maxOutputTokens=300))).run(RunRequest(input="x"))
    assert res.outcome.summary == "complete"
    assert [b["generationConfig"]["maxOutputTokens"] for b in api.requests] == [300, 600]


async def test_the_key_goes_in_x_goog_api_key_and_google_api_key_is_read_when_gemini_s_is_unset(
    api: GeminiServer, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agen.errors import InvalidError
    from agen.runner.providers import build_accounts

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-google-1")
    (account,) = await build_accounts(make({"provider": "gemini", "model": MODEL}))
    assert isinstance(account.provider, GeminiProvider)
    assert account.provider.api_key == "AIza-google-1"
    assert account.account_id("ns") == "ns/gemini:GEMINI_API_KEY"  # what a hold is kept on
    await account.provider.aclose()
    monkeypatch.delenv("GOOGLE_API_KEY")
    with pytest.raises(InvalidError) as e:
        await build_accounts(make({"provider": "gemini", "model": MODEL}))
    assert "GEMINI_API_KEY (nor GOOGLE_API_KEY) is not set" in str(e.value)
    # a named secret is sent to the baseUrl, in the header Google's SDK uses; a 400 saying the key
    # is not valid is an account error
    monkeypatch.setenv("MY_GEMINI", "AIza-mine")
    api.script(Reply(status=400))
    b = make(
        harness(api, apiKeySecret="MY_GEMINI"),
        files={"x-agen/secrets.json": {"secrets": {"MY_GEMINI": {"source": "env"}}}},
    )
    await runner(store, b).run(RunRequest(input="x"))
    assert api.headers[0]["x-goog-api-key"] == "AIza-mine"
    assert "authorization" not in api.headers[0]


async def test_a_bad_key_is_an_account_error_and_a_plain_400_is_not(api: GeminiServer) -> None:
    """The API answers a bad key with 400 API_KEY_INVALID: the run stops (or moves to a fallback
    provider) instead of trying the next model; another 400 fails over to the next model."""
    from agen.runner.providers.base import ProviderError

    provider = GeminiProvider(api_key="bad", model=MODEL, base_url=api.base_url)
    api.script(
        Reply(status=400, error_message="API key not valid. Please pass a valid API key."),
        Reply(status=400),
    )
    kinds = []
    for _ in range(2):
        with pytest.raises(ProviderError) as e:
            await provider.complete(
                ModelRequest(model=MODEL, messages=[{"role": "user", "content": "x"}])
            )
        kinds.append(e.value.kind)
    await provider.aclose()
    assert kinds == ["account", "other"]


async def test_auto_picks_gemini_on_its_key_for_a_gemini_model_in_the_documented_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agen.runner.providers import auto

    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-1")
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-1")
    first = await auto.choose(None)
    assert (first.provider, first.model) == ("gemini", "gemini-3.5-flash")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    assert (await auto.choose(None)).provider == "openai"  # Anthropic, OpenAI, Gemini, OpenRouter
    assert (await auto.choose("gemini-2.5-pro")).provider == "gemini"
    assert (await auto.choose("gpt-5.4-mini")).provider == "openai"
    assert (await auto.choose("meta/llama-4")).provider == "openrouter"
    monkeypatch.delenv("OPENROUTER_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY")
    alone = await auto.choose("claude-haiku-4-5")
    assert (alone.provider, alone.model) == ("gemini", "gemini-3.5-flash")
    assert alone.why == "GEMINI_API_KEY is set and claude-haiku-4-5 is no Gemini model"


async def test_history_from_another_provider_goes_back_with_the_documented_foreign_signature(
    api: GeminiServer,
) -> None:
    """A run that failed over to Gemini carries model turns made elsewhere: their calls get the
    value Google documents for such history (Gemini 3 refuses unsigned calls), and another
    provider's thinking blocks are left out."""
    call = {"id": "toolu_1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": "you are terse"},
        {"role": "user", "content": "look"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call],
            THINKING_KEY: [{"type": "thinking", "thinking": "hm", "signature": "s"}],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "seen"},
        {"role": "system", "content": "Budget: half the turns are used."},
    ]
    provider = GeminiProvider(api_key=None, model=MODEL, base_url=api.base_url)
    tools = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}]
    answer = await provider.complete(ModelRequest(model=MODEL, messages=chat, tools=tools))
    await provider.aclose()
    assert answer.text == "ok"
    sent = api.requests[0]["contents"]
    assert sent[1] == {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "look", "args": {}}, "thoughtSignature": FOREIGN_SIGNATURE}
        ],
    }
    assert sent[2]["parts"] == [
        {"functionResponse": {"name": "look", "response": {"output": "seen"}}},
        {"text": "Budget: half the turns are used."},
    ]


def test_gemini_prices_count_cached_input_and_know_preview_ids_and_long_prompts() -> None:
    assert gemini_cost("gemini-2.5-flash", 1_000_000, 0, 1_000_000) == pytest.approx(2.80)
    assert gemini_cost("models/gemini-2.5-flash-preview-09-2025", 0, 1_000_000, 0) == (
        pytest.approx(0.03)
    )
    assert gemini_cost("gemini-2.5-flash-lite", 1_000_000, 0, 0) == pytest.approx(0.10)
    # Pro over 200k prompt tokens: every token pays the long rate
    assert gemini_cost("gemini-2.5-pro", 100_000, 0, 0) == pytest.approx(0.125)
    assert gemini_cost("gemini-2.5-pro", 150_000, 100_000, 10_000) == pytest.approx(
        (150_000 * 2.50 + 100_000 * 0.25 + 10_000 * 15.0) / 1_000_000
    )
    assert gemini_cost("gemini-9-ultra", 10, 0, 0) is None


def test_the_stub_refuses_what_the_sdk_types_and_the_api_refuse() -> None:
    """The stub's checks can fail: each of these bodies is refused, saying where."""
    from tests.gemini_server import api_rules, type_problems

    fc = {"functionCall": {"name": "look", "args": {}, "id": "c1"}, "thoughtSignature": "c2ln"}
    bad_types = [
        ({"contents": [{"role": "user", "parts": [{"txt": "hi"}]}]}, "parts.0.txt"),
        ({"contents": [{"role": "user", "parts": [{"text": "x"}]}], "system": "x"}, "$.system"),
        ({"contents": []}, "$.contents: required"),
        (
            {"contents": [{"role": "user", "parts": [{"inlineData": {"data": "@@"}}]}]},
            "inlineData.data",
        ),
        (
            {
                "contents": [{"role": "user", "parts": [{"text": "x"}]}],
                "generationConfig": {"maxTokens": 5},
            },
            "generationConfig.maxTokens",
        ),
    ]
    for body, where in bad_types:
        assert any(where in p for p in type_problems(body)), (body, type_problems(body))
    png = "iVBORw0KGgo="  # the PNG signature
    bad_rules = [
        ([{"role": "model", "parts": [fc]}], "a thought signature was changed or made up"),
        (
            [{"role": "model", "parts": [{"functionCall": {"name": "look", "args": {}}}]}],
            "the first function call has no thought signature",
        ),
        (
            [
                {"role": "model", "parts": [{**fc, "thoughtSignature": FOREIGN_SIGNATURE}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "look", "response": {}}}]},
            ],
            "do not name the calls' ids",
        ),
        (
            [{"role": "user", "parts": [{"inlineData": {"mimeType": "image/jpeg", "data": png}}]}],
            "the bytes are not image/jpeg",
        ),
        (
            [{"role": "user", "parts": [{"text": "x", "functionCall": {"name": "a"}}]}],
            "exactly one",
        ),
        ([{"role": "function", "parts": [{"text": "x"}]}], "must be user or model"),
    ]
    for contents, said in bad_rules:
        found = api_rules({"contents": contents}, {}, MODEL)
        assert any(said in p for p in found), (contents, found)
