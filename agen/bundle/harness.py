"""x-agen/harness.json: which model provider and model a bundle runs on, and how it is called."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, Tag, model_validator

from agen.bundle._base import AgenModel, Duration, FieldProblem, SecretName, shaped
from agen.bundle.sandbox import Sandbox
from agen.util.duration import parse_duration_ms

Provider = Literal["auto", "anthropic", "openai", "gemini", "openrouter", "fake", "replay"]
Tier = Literal["low", "medium", "high", "xhigh", "max"]

DEFAULT_KEY_SECRET: dict[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}
"""The secret a provider reads its API key from when apiKeySecret is not set (gemini: GOOGLE_API_KEY
when GEMINI_API_KEY is not set, as Google's SDK does)."""


class FallbackProvider(AgenModel):
    """A separate provider account tried, in order, only when the current one has an account error."""

    provider: Provider = Field(description="as the harness's provider")
    model: str = Field(min_length=1, description="the model at that provider")
    fallback_models: list[str] = Field([], description="models of that provider tried in order")
    base_url: str | None = Field(None, description="as the harness's baseUrl")
    api_key_secret: SecretName | None = Field(
        None, description="as the harness's apiKeySecret (declared in x-agen/secrets.json)"
    )


class Router(AgenModel):
    """Tier limits for routing models (openrouter/auto, jev-router)."""

    tier: Tier | None = Field(None, description="the default cost tier of a task")
    max_tier: Tier | None = Field(None, description="the highest tier a task may ask for")
    budget_tier: Tier = Field("low", description="the tier used when the budget runs low")
    allowed_models: list[str] | None = Field(None, description="only these models may be routed to")
    excluded_models: list[str] | None = Field(None, description="these models are never routed to")


class AnthropicCache(AgenModel):
    """Where cache_control breakpoints go: a cached prefix is read back at a tenth of the input price."""

    system: bool = Field(True, description="mark the system prompt")
    tools: bool = Field(True, description="mark the tool definitions")
    history: bool = Field(
        True, description="mark the newest message, so each call reads the previous one's history"
    )


class AnthropicSpec(AgenModel):
    """Settings of provider anthropic (the Messages API)."""

    cache: AnthropicCache = Field(
        default_factory=AnthropicCache, description="prompt-caching breakpoints (all on by default)"
    )
    thinking_budget: int | None = Field(
        None,
        ge=1024,
        description="extended thinking: the tokens the model may think before answering (at least "
        "1024, less than maxOutputTokens); unset: no extended thinking",
    )


class ResultSpec(AgenModel):
    """finish's data is validated against this JSON Schema."""

    schema_: dict[str, Any] = Field(
        alias="schema", description="the JSON Schema the final answer must match"
    )


class Usage(AgenModel):
    input_tokens: int = Field(0, ge=0, description="input tokens")
    output_tokens: int = Field(0, ge=0, description="output tokens")
    cost_usd: float = Field(0.0, ge=0, description="cost in USD")


class ToolCall(AgenModel):
    name: str = Field(min_length=1, description="the tool, as server.tool or server_tool")
    arguments: dict[str, Any] = Field({}, description="its arguments")
    id: str | None = Field(None, description="the call id (default: call_<turn>_<index>)")


class Turn(AgenModel):
    """One scripted answer of the fake provider: text, tool calls, or both."""

    text: str | None = Field(None, description="the model's text")
    tool_calls: list[ToolCall] | None = Field(None, description="tool calls the model asks for")
    usage: Usage | None = Field(None, description="tokens and cost to report for the turn")
    finish_reason: str | None = Field(
        None, description="why the turn ended (default: tool_calls when there are calls, else stop)"
    )

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

    script: Script | None = Field(
        None, description="the turns to play, in order (or a bundle file holding them)"
    )
    echo: bool | None = Field(None, description="answer each input by repeating it")


class Harness(AgenModel):
    """x-agen/harness.json."""

    provider: Provider = Field(
        description="who runs the model: auto picks what this machine has (docs/providers.md), anthropic, openai, gemini and openrouter call those APIs, fake and replay run offline"
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        description="the model name at the provider (e.g. gpt-5-mini, claude-sonnet-5-5, gemini-3.5-flash, anthropic/claude-sonnet-4)",
    )
    fallback_models: list[str] = Field(
        [], description="models tried in order when the model keeps failing"
    )
    fallback_providers: list[FallbackProvider] = Field(
        [],
        description="other providers or accounts tried when this one fails or its account is held",
    )
    base_url: str | None = Field(
        None,
        description="a server to call instead of the provider's own: an OpenAI-compatible one (Ollama, vLLM, a proxy), or for anthropic and gemini a gateway speaking that API; no key is sent to it unless apiKeySecret names one (docs/providers.md)",
    )
    api_key_secret: SecretName | None = Field(
        None,
        description="the secret holding the API key; it must be declared in x-agen/secrets.json (default: ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or OPENROUTER_API_KEY for the provider)",
    )
    max_output_tokens: int = Field(8192, ge=1, description="output tokens per model call")
    context_tokens: int = Field(
        64000, ge=1000, description="the model's context window: history is trimmed to fit it"
    )
    temperature: float | None = Field(
        default=None,
        ge=0,
        le=2,
        description="sampling temperature (0 to 2); unset: the provider's default",
    )
    parallel_tool_calls: bool = Field(
        True, description="let the model ask for several tool calls in one turn"
    )
    reasoning_effort: Literal["low", "medium", "high"] | None = Field(
        None, description="for reasoning models: how hard to think"
    )
    openrouter: dict[str, Any] | None = Field(
        None,
        description='extra OpenRouter request fields, passed through (e.g. {"provider": {"sort": "price"}})',
    )
    router: Router | None = Field(
        None, description="tier limits for a routing model (openrouter/auto)"
    )
    anthropic: AnthropicSpec | None = Field(
        None, description="provider anthropic: prompt-caching breakpoints and extended thinking"
    )
    result: ResultSpec | None = Field(
        None, description="a JSON Schema the final answer must match (structured output)"
    )
    max_tool_result_chars: int = Field(
        32000,
        ge=0,
        description="a tool result longer than this is saved as an artifact and shortened in the context",
    )
    request_timeout: Duration = Field(
        "120s", description="how long one model call may take (a duration)"
    )
    max_in_flight: int = Field(
        100,
        ge=1,
        le=10_000,
        description="model calls one provider (anthropic, openai, gemini, openrouter) has in flight at once; more runs wait "
        "their turn inside agen. Raise it for a server that takes more",
    )
    max_retries: int = Field(
        3,
        ge=0,
        description="retries of a model call on 429 and 5xx, honouring Retry-After up to 60 s a wait",
    )
    fake: FakeSpec | None = Field(None, description="provider fake: a script of turns, or echo")
    cassette: str | None = Field(
        default=None,
        min_length=1,
        description="provider replay: a bundle file of recorded interactions (recordInteractions writes them)",
    )
    sandbox: Sandbox = Field(
        default_factory=Sandbox,
        description="how the workspace run tool and stdio MCP servers are confined (bubblewrap): "
        "on by default, workspace writable, no network (docs/security.md)",
    )

    @model_validator(mode="after")
    def _model_when_needed(self) -> Harness:
        if self.model is None and self.provider in ("anthropic", "openai", "gemini", "openrouter"):
            raise FieldProblem("model", f"required for provider {self.provider}")
        if self.provider == "replay" and self.cassette is None:
            raise FieldProblem(
                "cassette", "required for provider replay (a JSON file in the bundle)"
            )
        budget = self.anthropic.thinking_budget if self.anthropic else None
        if budget is not None and budget >= self.max_output_tokens:
            raise FieldProblem(
                "anthropic.thinkingBudget",
                f"{budget} must be less than maxOutputTokens ({self.max_output_tokens}): the "
                "thinking is part of the output; raise maxOutputTokens or lower the budget",
            )
        if budget is not None and self.temperature is not None:
            raise FieldProblem(
                "temperature",
                "the Anthropic API takes no temperature with extended thinking "
                "(anthropic.thinkingBudget): remove one of them",
            )
        return self

    @property
    def key_secret(self) -> str | None:
        """The secret holding this provider's API key (explicit or the provider's default)."""
        return self.api_key_secret or DEFAULT_KEY_SECRET.get(self.provider)

    @property
    def request_timeout_ms(self) -> int:
        return parse_duration_ms(self.request_timeout)
