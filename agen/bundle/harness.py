"""x-agen/harness.json: which model provider and model a bundle runs on, and how it is called."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, Tag, model_validator

from agen._duration import parse_duration_ms
from agen.bundle._base import AgenModel, Duration, FieldProblem, SecretName, shaped

Provider = Literal["auto", "openai", "openrouter", "fake", "replay"]
Tier = Literal["low", "medium", "high", "xhigh", "max"]

DEFAULT_KEY_SECRET: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}
"""The secret a provider reads its API key from when apiKeySecret is not set."""


class FallbackProvider(AgenModel):
    """A separate provider account tried, in order, only when the current one has an account error."""

    provider: Provider
    model: str = Field(min_length=1)
    fallback_models: list[str] = []
    base_url: str | None = None
    api_key_secret: SecretName | None = None


class Router(AgenModel):
    """Tier limits for routing models (openrouter/auto, jev-router)."""

    tier: Tier | None = None
    max_tier: Tier | None = None
    budget_tier: Tier = "low"
    allowed_models: list[str] | None = None
    excluded_models: list[str] | None = None


class ResultSpec(AgenModel):
    """finish's data is validated against this JSON Schema."""

    schema_: dict[str, Any] = Field(alias="schema")


class Usage(AgenModel):
    input_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(0, ge=0)
    cost_usd: float = Field(0.0, ge=0)


class ToolCall(AgenModel):
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = {}
    id: str | None = None


class Turn(AgenModel):
    """One scripted answer of the fake provider: text, tool calls, or both."""

    text: str | None = None
    tool_calls: list[ToolCall] | None = None
    usage: Usage | None = None
    finish_reason: str | None = None

    @model_validator(mode="after")
    def _has_content(self) -> Turn:
        if self.text is None and self.tool_calls is None:
            raise ValueError('a turn needs "text" or "toolCalls"')
        return self


def _script_shape(value: Any) -> str | None:
    return "turns" if isinstance(value, list) else "path" if isinstance(value, str) else None


Script = Annotated[
    Annotated[list[Turn], Tag("~turns")] | Annotated[str, Tag("~path")],
    shaped(
        _script_shape, ("turns", "path"), "a list of turns or a path to a JSON file in the bundle"
    ),
]


class FakeSpec(AgenModel):
    """The fake provider: a script (inline or a JSON file in the bundle), or echo mode without one."""

    script: Script | None = None
    echo: bool | None = None


class Harness(AgenModel):
    """x-agen/harness.json."""

    provider: Provider
    model: str | None = Field(default=None, min_length=1)
    fallback_models: list[str] = []
    fallback_providers: list[FallbackProvider] = []
    base_url: str | None = None
    api_key_secret: SecretName | None = None
    max_output_tokens: int = Field(8192, ge=1)
    context_tokens: int = Field(64000, ge=1000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    parallel_tool_calls: bool = True
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    openrouter: dict[str, Any] | None = None
    router: Router | None = None
    result: ResultSpec | None = None
    max_tool_result_chars: int = Field(32000, ge=0)
    request_timeout: Duration = "120s"
    max_retries: int = Field(3, ge=0)
    fake: FakeSpec | None = None
    cassette: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _model_when_needed(self) -> Harness:
        if self.model is None and self.provider in ("openai", "openrouter"):
            raise FieldProblem("model", f"required for provider {self.provider}")
        if self.provider == "replay" and self.cassette is None:
            raise FieldProblem(
                "cassette", "required for provider replay (a JSON file in the bundle)"
            )
        return self

    @property
    def key_secret(self) -> str | None:
        """The secret holding this provider's API key (explicit or the provider's default)."""
        return self.api_key_secret or DEFAULT_KEY_SECRET.get(self.provider)

    @property
    def request_timeout_ms(self) -> int:
        return parse_duration_ms(self.request_timeout)
