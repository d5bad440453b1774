"""The model provider port: one request in, one answer (text and/or tool calls) out.

Every adapter (openai, openrouter, fake, replay, the recording wrapper) speaks these
shapes; messages are OpenAI chat-completions dicts because every supported server
understands them. Provider failures are mapped to ``ProviderError`` with a ``kind``
the model-turn rules act on (retry, fail over, stop).
"""

from __future__ import annotations

import abc
import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

ErrorKind = Literal["retryable", "account", "other"]
# The key of an assistant message's reasoning blocks (ModelResponse.thinking) in the request messages:
# providers that take them (anthropic) send them back, the others drop the key.
THINKING_KEY = "thinking_blocks"
# The key of a user message's files in the request messages: [{"name", "media_type", "size", "data"
# (base64)}]; each provider sends them in its own form (agen/runner/providers/_files.py).
ATTACHMENTS_KEY = "attachments"


@dataclass
class ModelRequest:
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int | None = None
    tool_choice: str | None = None  # "none" for the final report call; None = the model decides
    temperature: float | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None
    tier: str | None = None  # routing-model tier (OpenRouter)
    run_id: str = ""
    run_turn: int = 0  # assistant turns already stored in this run (fake/replay script position)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ToolCallOut:
    id: str
    name: str  # wire name
    arguments: dict[str, Any]
    arguments_error: str | None = None  # the model sent arguments that are not a JSON object


@dataclass
class ModelUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0  # input tokens read from the provider's prompt cache
    cost_usd: float | None = None  # reported by the provider, or priced from its usage (prices.py)
    # input tokens written to the prompt cache (Anthropic bills them above plain input)
    cache_write_tokens: int = 0


@dataclass
class ModelResponse:
    text: str
    tool_calls: list[ToolCallOut] = field(default_factory=list)
    finish_reason: str | None = None
    usage: ModelUsage = field(default_factory=ModelUsage)
    model: str = ""  # the model that served the answer
    raw: dict[str, Any] | None = None
    attrs: dict[str, Any] = field(
        default_factory=dict
    )  # provider extras for the span (router decision)
    # Provider-native reasoning blocks (Anthropic thinking with its signature) that must go back
    # unchanged with this assistant turn in later requests; kept in the stored message's raw answer.
    thinking: list[dict[str, Any]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.text.strip() and not self.tool_calls

    @property
    def cut_off(self) -> bool:
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelResponse:
        return cls(
            text=str(data.get("text") or ""),
            tool_calls=[ToolCallOut(**c) for c in data.get("tool_calls") or []],
            finish_reason=data.get("finish_reason"),
            usage=ModelUsage(**(data.get("usage") or {})),
            model=str(data.get("model") or ""),
            raw=data.get("raw"),
            attrs=dict(data.get("attrs") or {}),
            thinking=list(data.get("thinking") or []),
        )


@dataclass(frozen=True)
class Delta:
    """A piece of an answer as the provider streams it: text the user reads, or the model's
    reasoning (``thinking``). Deltas are for watching a turn live; the turn itself is the
    ModelResponse ``complete`` returns, assembled from the same stream."""

    text: str
    kind: Literal["text", "thinking"] = "text"


DeltaSink = Callable[[Delta], Awaitable[None]]
"""Where a streaming provider hands each delta, in order, as it arrives."""


@dataclass(frozen=True)
class WatchedSink:
    """A DeltaSink that also says whether anyone reads the run's deltas now (the runner's: a
    subscriber on the live bus, or the SDK's event sink). A provider that has its whole answer at
    once (the fake) then sends it in one delta rather than word by word: a run nobody watches
    does not pay for streaming, and whoever starts watching mid-call still gets the whole text."""

    send: DeltaSink
    watched: Callable[[], bool]

    async def __call__(self, delta: Delta) -> None:
        await self.send(delta)


def watched(on_delta: DeltaSink) -> bool:
    """Whether anyone reads these deltas now (a plain sink: always)."""
    return not isinstance(on_delta, WatchedSink) or on_delta.watched()


class ProviderError(Exception):
    """A failed model call, classified for the model-turn rules (seed 000 §8)."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s


def classify_status(status: int, body: str) -> ErrorKind:
    """429/5xx retry; 401/402/403 are account errors (except a moderation 403); the rest fail over."""
    if status == 429 or status >= 500:
        return "retryable"
    if status in (401, 402):
        return "account"
    if status == 403:
        return "other" if "moderation" in body.lower() or "flagged" in body.lower() else "account"
    return "other"


def parse_arguments(text: str | None) -> tuple[dict[str, Any], str | None]:
    """A tool call's JSON arguments; an error text instead when they are not a JSON object."""
    if text is None or not str(text).strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        return {}, f"the arguments are not valid JSON ({e.msg}); send a JSON object"
    if not isinstance(value, dict):
        return {}, "the arguments must be a JSON object"
    return value, None


def tool_declarations(tools: list[dict[str, Any]], schema_key: str) -> list[dict[str, Any]]:
    """The run's tools (OpenAI ``function`` tools) as name, description and JSON Schema under
    ``schema_key``: the shape of Anthropic's tools and Gemini's function declarations."""
    out = []
    for t in tools:
        fn = t.get("function") or t
        tool: dict[str, Any] = {
            "name": fn["name"],
            schema_key: fn.get("parameters") or {"type": "object", "properties": {}},
        }
        if fn.get("description"):
            tool["description"] = fn["description"]
        out.append(tool)
    return out


class ModelProvider(abc.ABC):
    """One provider account (an API key at a base URL), or a fake standing in for one."""

    name: str = "provider"
    default_model: str = ""

    @abc.abstractmethod
    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        """One chat completion. Raises ProviderError.

        With ``on_delta`` the provider streams: each piece of text goes to ``on_delta`` as it
        arrives, and the ModelResponse returned is the one the same call without streaming returns
        (assembled from the stream). A stream that breaks off is a retryable ProviderError: no
        partial answer is ever returned. Without it, the provider may answer in one piece."""

    async def aclose(self) -> None:
        return None

    def route_tier(self, model: str, task_tier: str | None, budget_pressure: bool) -> str | None:
        """The cost tier a routing model of this provider runs at for one run (seed 000 §8); None
        when the provider does not route (every provider but OpenRouter), so the engine never asks
        which provider it talks to."""
        return None

    def take_recorded(self, run_id: str) -> list[dict[str, Any]] | None:
        """The interactions recorded for a run (only the recording wrapper has any)."""
        return None
