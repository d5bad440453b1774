"""Every gen_ai.* attribute agen exports is one the OpenTelemetry GenAI semantic conventions define
(as the opentelemetry-semantic-conventions package ships them), so a renamed attribute shows here."""

from __future__ import annotations

from typing import Any

from agen.domain.semconv import RECORDED_BEFORE_SEMCONV
from agen.otel.convert import RunInfo, RunMessage, SpanRow, attributes


def _defined() -> set[str]:
    # the package's generated gen_ai names (test-only: agen itself does not import it)
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

    return {v for k, v in vars(gen_ai_attributes).items() if k.startswith("GEN_AI_")}


def _chat_row(attrs: dict[str, Any]) -> SpanRow:
    return SpanRow(
        id="01M8TS376GC6M049PBAXRBARXT",
        trace_id="01M8TS376GC6M049PBAXRBARXA",
        name="gen_ai.chat",
        status="ok",
        attrs=attrs,
        run_id="r1",
        namespace="default",
        deployment="bot",
        started_ms=1,
        ended_ms=2,
    )


def test_an_exported_chat_span_uses_only_gen_ai_names_the_conventions_define() -> None:
    recorded_now = {
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.response.model": "gpt-x",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 2,
        "gen_ai.usage.cache_read.input_tokens": 4,
        "gen_ai.usage.cache_creation.input_tokens": 3,  # anthropic's cache writes
        "agen.turn": 1,
    }
    messages = [
        RunMessage(role="user", content="hi", turn=0),
        RunMessage(role="assistant", content="hello", turn=1),
    ]
    out = attributes(_chat_row(recorded_now), RunInfo(messages=messages), content=True)
    gen_ai = {k for k in out if k.startswith("gen_ai.")}
    assert {"gen_ai.input.messages", "gen_ai.output.messages"} <= gen_ai
    assert gen_ai - _defined() == set()


def test_a_span_recorded_before_the_rename_exports_the_current_name() -> None:
    old = {"gen_ai.usage.cached_input_tokens": 7, "gen_ai.request.model": "m"}
    out = attributes(_chat_row(old), RunInfo())
    assert out["gen_ai.usage.cache_read.input_tokens"] == 7
    assert set(RECORDED_BEFORE_SEMCONV.values()).isdisjoint(out)
