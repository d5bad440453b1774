"""Streaming providers against local stubs: a streamed turn adds up to exactly what the same call
answers unstreamed (the checkpoint is the same), deltas come in order, a stream that breaks off is
a retryable failure with no partial answer, a 429/529 keeps its Retry-After, and a cassette
recorded from a stream replays the same deltas and the same turn."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agen.bundle.harness import AnthropicSpec
from agen.runner.providers.anthropic import AnthropicProvider
from agen.runner.providers.base import Delta, ModelProvider, ModelRequest, ProviderError
from agen.runner.providers.fake import FakeProvider
from agen.runner.providers.gemini import GeminiProvider
from agen.runner.providers.openai import OpenAIProvider
from agen.runner.providers.replay import RecordingProvider, ReplayProvider
from agen.runner.types import RunRequest
from agen.store import SQLiteStore
from agen.testing.openai_server import OpenAIServer
from agen.testing.openai_server import Reply as OReply
from tests.anthropic_server import AnthropicServer
from tests.anthropic_server import Reply as AReply
from tests.gemini_server import GeminiServer
from tests.gemini_server import Reply as GReply
from tests.runner_helpers import make, runner

CALLS = [
    {"id": "call_a", "name": "notes_add", "arguments": {"text": "a note long enough to split"}},
    {"id": "call_b", "name": "notes_find", "arguments": {"text": "x"}},
]
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("notes_add", "notes_find")
]


def request(model: str) -> ModelRequest:
    return ModelRequest(
        model=model,
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        tools=TOOLS,
        max_tokens=4096,
    )


class Collect:
    def __init__(self) -> None:
        self.deltas: list[Delta] = []

    async def __call__(self, delta: Delta) -> None:
        self.deltas.append(delta)

    def text(self, kind: str = "text") -> str:
        return "".join(d.text for d in self.deltas if d.kind == kind)


@pytest.fixture
async def anthropic_api() -> AsyncIterator[AnthropicServer]:
    async with AnthropicServer() as server:
        yield server
    assert server.invalid == [], server.invalid


@pytest.fixture
async def openai_api() -> AsyncIterator[OpenAIServer]:
    async with OpenAIServer() as server:
        yield server


@pytest.fixture
async def gemini_api() -> AsyncIterator[GeminiServer]:
    async with GeminiServer() as server:
        yield server
    assert server.invalid == [], server.invalid


def gemini(api: GeminiServer) -> GeminiProvider:
    return GeminiProvider(api_key="k", model="gemini-3.5-flash", base_url=api.base_url)


def anthropic(api: AnthropicServer, thinking: int | None = None) -> AnthropicProvider:
    spec = AnthropicSpec.model_validate({"thinkingBudget": thinking} if thinking else {})
    return AnthropicProvider(
        api_key="k", model="claude-sonnet-4-5", base_url=api.base_url, spec=spec
    )


def openai(api: OpenAIServer) -> OpenAIProvider:
    return OpenAIProvider(api_key="k", model="gpt-x", base_url=api.base_url)


async def test_openai_streamed_turn_is_the_unstreamed_turn_with_tool_call_deltas_assembled(
    openai_api: OpenAIServer,
) -> None:
    reply = OReply(text="Let me look that up for you.", tool_calls=CALLS, cached_tokens=3)
    openai_api.script(reply, reply)
    provider = openai(openai_api)
    plain = await provider.complete(request("gpt-x"))
    seen = Collect()
    streamed = await provider.complete(request("gpt-x"), seen)
    await provider.aclose()
    assert openai_api.requests[1]["stream"] is True
    assert openai_api.requests[1]["stream_options"] == {"include_usage": True}
    assert len(seen.deltas) == 7 and seen.text() == "Let me look that up for you."
    # the same turn, raw body included, but for the id the stub numbers per request
    assert streamed.raw is not None and plain.raw is not None
    assert streamed.raw.pop("id") == "chatcmpl-2" and plain.raw.pop("id") == "chatcmpl-1"
    streamed.raw["created"] = plain.raw["created"]
    assert streamed.to_dict() == plain.to_dict()
    assert [c.arguments for c in streamed.tool_calls] == [c["arguments"] for c in CALLS]
    assert streamed.usage.cached_tokens == 3


async def test_anthropic_streamed_turn_is_the_unstreamed_turn_with_thinking_and_tool_input(
    anthropic_api: AnthropicServer,
) -> None:
    reply = AReply(
        text="Checking the notes.",
        thinking="The user wants notes; add one, then find.",
        tool_calls=CALLS,
        cache_creation=40,
        cache_read=200,
    )
    anthropic_api.script(reply, reply)
    provider = anthropic(anthropic_api, thinking=2048)
    plain = await provider.complete(request("claude-sonnet-4-5"))
    seen = Collect()
    streamed = await provider.complete(request("claude-sonnet-4-5"), seen)
    await provider.aclose()
    assert anthropic_api.requests[1]["stream"] is True
    assert seen.text() == "Checking the notes."
    assert seen.text("thinking") == "The user wants notes; add one, then find."
    assert streamed.raw is not None and plain.raw is not None
    assert streamed.raw.pop("id") == "msg_2" and plain.raw.pop("id") == "msg_1"
    # the signature the stub gave this call, kept whole from its signature_delta
    assert streamed.thinking[0]["signature"] == "sig-2-1"
    streamed.thinking[0]["signature"] = streamed.raw["content"][0]["signature"] = "sig-1-0"
    assert streamed.to_dict() == plain.to_dict()
    assert streamed.usage.cache_write_tokens == 40 and streamed.usage.cached_tokens == 200


async def test_gemini_streamed_turn_is_the_unstreamed_turn_with_thoughts_calls_and_signature(
    gemini_api: GeminiServer,
) -> None:
    reply = GReply(
        text="Checking the notes.",
        thought="The user wants notes; add one, then find.",
        tool_calls=CALLS,
        cached_tokens=4,
        thoughts_tokens=12,
    )
    gemini_api.script(reply, reply)
    provider = gemini(gemini_api)
    plain = await provider.complete(request("gemini-3.5-flash"))
    seen = Collect()
    streamed = await provider.complete(request("gemini-3.5-flash"), seen)
    await provider.aclose()
    assert gemini_api.paths == [
        "gemini-3.5-flash:generateContent",
        "gemini-3.5-flash:streamGenerateContent?alt=sse",
    ]
    assert seen.text() == "Checking the notes."
    assert seen.text("thinking") == "The user wants notes; add one, then find."
    assert len(seen.deltas) == 11  # word by word
    assert streamed.raw is not None and plain.raw is not None
    assert streamed.raw.pop("responseId") == "r2" and plain.raw.pop("responseId") == "r1"
    # the signature the stub gave this call, kept on its part; the rest is the very same turn
    call_part = streamed.raw["candidates"][0]["content"]["parts"][2]
    assert (
        call_part["thoughtSignature"]
        != plain.raw["candidates"][0]["content"]["parts"][2]["thoughtSignature"]
    )
    call_part["thoughtSignature"] = plain.raw["candidates"][0]["content"]["parts"][2][
        "thoughtSignature"
    ]
    assert streamed.to_dict() == plain.to_dict()
    assert [c.arguments for c in streamed.tool_calls] == [c["arguments"] for c in CALLS]
    assert streamed.usage.cached_tokens == 4 and streamed.usage.output_tokens == 17


async def test_a_stream_that_breaks_off_is_retryable_and_returns_nothing(
    openai_api: OpenAIServer, anthropic_api: AnthropicServer, gemini_api: GeminiServer
) -> None:
    openai_api.script(OReply(text="half an answer", break_stream=True))
    anthropic_api.script(AReply(text="half an answer", overloaded_mid_stream=True))
    gemini_api.script(GReply(text="half an answer", break_stream=True))
    for provider, model in (
        (gemini(gemini_api), "gemini-3.5-flash"),
        (openai(openai_api), "gpt-x"),
        (anthropic(anthropic_api), "claude-x"),
    ):
        seen = Collect()
        with pytest.raises(ProviderError) as caught:
            await provider.complete(request(model), seen)
        await provider.aclose()
        assert caught.value.kind == "retryable"
        assert seen.text() == "half "  # what streamed before the break, and nothing returned
    assert "overloaded_error" in str(caught.value)


async def test_429_and_529_on_a_stream_keep_retry_after(
    openai_api: OpenAIServer, anthropic_api: AnthropicServer, gemini_api: GeminiServer
) -> None:
    openai_api.script(OReply(status=429, retry_after="7"))
    anthropic_api.script(AReply(status=529, retry_after="9", error_type="overloaded_error"))
    gemini_api.script(GReply(status=429, retry_after="5"))
    got = []
    for provider, model in (
        (openai(openai_api), "gpt-x"),
        (anthropic(anthropic_api), "claude-x"),
        (gemini(gemini_api), "gemini-3.5-flash"),
    ):
        with pytest.raises(ProviderError) as caught:
            await provider.complete(request(model), Collect())
        await provider.aclose()
        got.append((caught.value.kind, caught.value.status, caught.value.retry_after_s))
    assert got == [("retryable", 429, 7.0), ("retryable", 529, 9.0), ("retryable", 429, 5.0)]


async def _record_and_replay(inner: ModelProvider, model: str) -> None:
    recorder = RecordingProvider(inner)
    live = Collect()
    req = request(model)
    req.run_id = "run-1"
    answer = await recorder.complete(req, live)
    cassette = json.loads(json.dumps({"interactions": recorder.take_recorded("run-1")}))
    await recorder.aclose()
    replay = ReplayProvider(cassette["interactions"])
    again = Collect()
    replayed = await replay.complete(req, again)
    assert again.deltas == live.deltas and len(live.deltas) >= 3
    assert replayed.to_dict() == json.loads(json.dumps(answer.to_dict()))


async def test_a_cassette_recorded_from_each_stub_streams_identically_on_replay(
    openai_api: OpenAIServer, anthropic_api: AnthropicServer, gemini_api: GeminiServer
) -> None:
    openai_api.script(OReply(text="Streaming from the OpenAI stub.", tool_calls=CALLS[:1]))
    anthropic_api.script(AReply(text="Streaming from the Anthropic stub.", thinking="hmm ok"))
    gemini_api.script(
        GReply(text="Streaming from the Gemini stub.", thought="hmm", tool_calls=CALLS)
    )
    await _record_and_replay(gemini(gemini_api), "gemini-3.5-flash")
    await _record_and_replay(openai(openai_api), "gpt-x")
    await _record_and_replay(anthropic(anthropic_api, thinking=2048), "claude-sonnet-4-5")
    await _record_and_replay(FakeProvider(), "fake")


async def test_the_fake_model_streams_its_answer_word_by_word() -> None:
    seen = Collect()
    answer = await FakeProvider().complete(request("fake"), seen)
    assert [d.text for d in seen.deltas] == ["You ", "said: ", "hi"]
    assert answer.text == "You said: hi"


async def test_a_run_whose_stream_breaks_off_retries_and_checkpoints_only_the_whole_answer(
    openai_api: OpenAIServer, tmp_path: Path
) -> None:
    openai_api.script(
        OReply(text="half of a first try", break_stream=True), OReply(text="the whole answer")
    )
    store = await SQLiteStore.open(tmp_path / "s.db")
    bundle = make({"provider": "openai", "model": "m", "baseUrl": openai_api.base_url})
    seen: list[dict[str, Any]] = []

    async def sink(event: dict[str, Any]) -> None:
        seen.append(event)

    res = await runner(store, bundle).run(RunRequest(input="hi"), events=sink)
    assert res.outcome.summary == "the whole answer"
    rows = await store.all(
        "SELECT role, content FROM messages WHERE run_id = ? ORDER BY seq", (res.run_id,)
    )
    assert [(r["role"], r["content"]) for r in rows] == [
        ("user", "hi"),
        ("assistant", "the whole answer"),  # nothing of the broken stream
    ]
    calls = [e for e in seen if e["type"] in ("model.started", "model.finished")]
    assert [(e["type"], e.get("attempt", e.get("status"))) for e in calls] == [
        ("model.started", 0),
        ("model.finished", "error"),
        ("model.started", 1),  # a watcher drops what the first attempt showed
        ("model.finished", "ok"),
    ]
    await store.close()
