"""Anthropic's Messages API over httpx (no SDK at run time): api.anthropic.com or a gateway at ``baseUrl``.

The run's messages are OpenAI chat dicts (base.py); here they become the Messages API's shape: the
system prompt as ``system`` blocks, tool results as ``tool_result`` blocks in user messages
(consecutive ones merged: the roles must alternate), the assistant's thinking blocks sent back
unchanged before its text and ``tool_use`` blocks. ``cache_control`` breakpoints go on the system
prompt, the tools and the newest message (harness ``anthropic.cache``), so each call reads the
previous call's prefix from the cache. The cost is priced here (prices.py) from the usage, cache
writes and reads included: the API reports tokens, not dollars.

Streamed (``stream: true``), the events (``message_start``, ``content_block_start`` / ``_delta`` /
``_stop`` with text, ``input_json_delta``, thinking and signature deltas, ``message_delta`` with the
stop reason and final usage, ``message_stop``) are assembled into the Message the same call
without streaming answers, and parsed by the same ``parse_message``. An ``error`` event mid-stream
(``overloaded_error``) or a stream that ends before ``message_stop`` is retryable.
"""

from __future__ import annotations

import json
from typing import Any

from agen.bundle.harness import AnthropicSpec
from agen.runner.providers._files import PDF, files_of, refuse
from agen.runner.providers._http import MAX_IN_FLIGHT, Endpoint, HttpProvider
from agen.runner.providers.base import (
    THINKING_KEY,
    Delta,
    DeltaSink,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    ProviderError,
    ToolCallOut,
    tool_declarations,
)
from agen.runner.providers.prices import claude_cost

ANTHROPIC_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192  # the API requires max_tokens; the harness always sets one
EPHEMERAL = {"type": "ephemeral"}
THINKING_BLOCKS = ("thinking", "redacted_thinking")  # sent back as they came; never cache-marked
# stop_reason → agen's finish reasons (the ones model_turn acts on: "length" is asked again with a
# higher limit; refusal is raised, so the next model is tried and the run ends with the reason)
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "pause_turn": "stop",
}


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _assistant_blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [  # first, unchanged (signed); another provider's are dropped
        b for b in m.get(THINKING_KEY) or [] if b.get("type") in THINKING_BLOCKS
    ]
    if m.get("content"):
        blocks.append(_text_block(str(m["content"])))
    for c in m.get("tool_calls") or []:
        fn = c.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except ValueError:
            args = {}
        blocks.append(
            {
                "type": "tool_use",
                "id": c["id"],
                "name": fn.get("name", ""),
                "input": args if isinstance(args, dict) else {},
            }
        )
    return blocks


MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the API's limit for one image
IMAGE_MEDIA = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _file_blocks(m: dict[str, Any], model: str) -> list[dict[str, Any]]:
    """A user message's files as content blocks: images as ``image``, PDFs and text files as
    ``document`` (base64 and text sources), named by their title."""
    blocks: list[dict[str, Any]] = []
    for f in files_of(m):
        if f.media_type in IMAGE_MEDIA:
            if f.size > MAX_IMAGE_BYTES:
                raise refuse("anthropic", model, f, "an image may have at most 5 MB; scale it down")
            source = {"type": "base64", "media_type": f.media_type, "data": f.data}
            blocks.append({"type": "image", "source": source})
        elif f.media_type == PDF:
            source = {"type": "base64", "media_type": PDF, "data": f.data}
            blocks.append({"type": "document", "source": source, "title": f.name})
        else:
            source = {"type": "text", "media_type": "text/plain", "data": f.text}
            blocks.append({"type": "document", "source": source, "title": f.name})
    return blocks


def to_messages(
    chat: list[dict[str, Any]], model: str = ""
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any] | None]:
    """OpenAI chat messages as (system blocks, Messages API messages, the history's last block).
    The leading system message is the system prompt; a later one (budget notes after the history)
    is a user text, since the API has no system role in messages. Consecutive messages of one role
    are merged into one. The history's last block is the newest one that is not such a note: a
    note changes from call to call, so a cache breakpoint on it would never be read back."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    for i, m in enumerate(chat):
        role = m.get("role")
        if role == "system" and i == 0:
            if m.get("content"):
                system.append(_text_block(str(m["content"])))
            continue
        if role == "assistant":
            blocks = _assistant_blocks(m)
            api_role = "assistant"
        elif role == "tool":
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": m.get("tool_call_id") or "",
                    "content": str(m.get("content") or "(no output)"),
                }
            ]
            api_role = "user"
        else:  # user (files first, as the API advises), or a late system note
            text = str(m.get("content") or "")
            blocks = _file_blocks(m, model) + ([_text_block(text)] if text.strip() else [])
            api_role = "user"
        if not blocks:
            continue  # the API refuses empty text blocks
        if role != "system":
            last = blocks[-1]
        if out and out[-1]["role"] == api_role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": api_role, "content": blocks})
    return system, out, last


def _mark(block: dict[str, Any]) -> None:
    block["cache_control"] = EPHEMERAL


class AnthropicProvider(HttpProvider):
    name = "anthropic"
    account_400 = ("credit balance",)  # the API says an empty balance with a 400

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str = "",
        base_url: str | None = None,
        timeout_s: float = 120.0,
        spec: AnthropicSpec | None = None,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self.base_url = (base_url or ANTHROPIC_URL).rstrip("/")
        # the SDK's base URL has no /v1; a gateway URL given with it works too
        self.path = "/messages" if self.base_url.endswith("/v1") else "/v1/messages"
        self.default_model = model
        self.api_key = api_key
        self.spec = spec or AnthropicSpec()
        headers = {"content-type": "application/json", "anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        self.endpoint = Endpoint(
            self.name, self.base_url, headers, timeout_s=timeout_s, max_in_flight=max_in_flight
        )

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API request for one call (cache breakpoints placed as the harness says)."""
        system, messages, last = to_messages(request.messages, request.model or self.default_model)
        max_tokens = request.max_tokens or DEFAULT_MAX_TOKENS
        body: dict[str, Any] = {
            "model": request.model or self.default_model,
            "max_tokens": max_tokens,
            "messages": messages,
        }
        cache = self.spec.cache
        if system:
            if cache.system:
                _mark(system[-1])
            body["system"] = system
        if request.tools:
            tools = tool_declarations(request.tools, "input_schema")
            if cache.tools:
                _mark(tools[-1])
            body["tools"] = tools
            if request.tool_choice == "none":
                body["tool_choice"] = {"type": "none"}
            elif request.parallel_tool_calls is False:
                body["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
        if cache.history and last is not None and last.get("type") not in THINKING_BLOCKS:
            _mark(last)
        budget = self.spec.thinking_budget
        if budget is not None and max_tokens > 1024:
            # thinking counts towards max_tokens: a call given fewer (budget pressure) thinks less
            body["thinking"] = {"type": "enabled", "budget_tokens": min(budget, max_tokens - 1)}
        elif request.temperature is not None:
            body["temperature"] = request.temperature  # the API takes none with thinking
        if request.reasoning_effort:
            body["output_config"] = {"effort": request.reasoning_effort}
        return body

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        body = self.body(request)
        if on_delta is None:
            return parse_message(await self.post_json(self.path, body), body["model"])
        events = EventAssembler()
        streamed = {**body, "stream": True}
        await self.stream(
            self.path, streamed, events, on_delta, stop_when_finished=True, broke_off=error_event
        )
        assert events.message is not None  # finished: message_stop came, after message_start
        return parse_message(events.message, body["model"])


def error_event(event: dict[str, Any]) -> str | None:
    """An ``error`` event (``overloaded_error`` mid-stream), described."""
    if event.get("type") != "error":
        return None
    error = event.get("error") or {}
    return f"{error.get('type', 'error')}: {str(error.get('message', ''))[:500]}"


class EventAssembler:
    """Messages API stream events in, the Message they add up to out (``message`` once started)."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.json_parts: dict[int, list[str]] = {}
        self.finished = False  # message_stop came: the answer is whole, and nothing follows

    def _block(self, index: int) -> dict[str, Any]:
        assert self.message is not None
        blocks: list[dict[str, Any]] = self.message["content"]
        if not 0 <= index < len(blocks):
            raise ProviderError(
                "retryable", f"a streamed delta names content block {index}, never started"
            )
        return blocks[index]

    def add(self, event: dict[str, Any]) -> list[Delta]:
        """Take one event; the text or thinking it adds, to show as it comes."""
        delta = self._take(event)
        return [delta] if delta is not None else []

    def _take(self, event: dict[str, Any]) -> Delta | None:
        kind = event.get("type")
        if kind == "message_start":
            self.message = dict(event.get("message") or {})
            self.message["content"] = list(self.message.get("content") or [])
            self.message["usage"] = dict(self.message.get("usage") or {})
            return None
        if self.message is None:
            if kind == "ping":
                return None
            raise ProviderError("retryable", f"a streamed {kind} event came before message_start")
        if kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            if block.get("type") == "tool_use":
                self.json_parts[len(self.message["content"])] = []
            self.message["content"].append(block)
        elif kind == "content_block_delta":
            index = int(event.get("index", 0))
            block = self._block(index)
            delta = event.get("delta") or {}
            dk = delta.get("type")
            if dk == "text_delta":
                piece = str(delta.get("text") or "")
                block["text"] = str(block.get("text") or "") + piece
                return Delta(piece) if piece else None
            if dk == "input_json_delta":
                self.json_parts.setdefault(index, []).append(str(delta.get("partial_json") or ""))
            elif dk == "thinking_delta":
                piece = str(delta.get("thinking") or "")
                block["thinking"] = str(block.get("thinking") or "") + piece
                return Delta(piece, "thinking") if piece else None
            elif dk == "signature_delta":
                block["signature"] = str(block.get("signature") or "") + str(
                    delta.get("signature") or ""
                )
        elif kind == "content_block_stop":
            index = int(event.get("index", 0))
            parts = self.json_parts.pop(index, None)
            if parts is not None:
                text = "".join(parts)
                try:
                    self._block(index)["input"] = json.loads(text) if text.strip() else {}
                except ValueError:
                    self._block(index)["input"] = text  # parse_message reports it as not an object
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            for key in ("stop_reason", "stop_sequence"):
                if key in delta:
                    self.message[key] = delta[key]
            for key, value in (event.get("usage") or {}).items():
                if value is not None:
                    self.message["usage"][key] = value
        elif kind == "message_stop":
            self.finished = True
        return None


def parse_message(data: dict[str, Any], model_sent: str) -> ModelResponse:
    """A Messages API answer as a ModelResponse: text, tool calls, thinking blocks kept whole,
    usage with cache writes and reads, and its price."""
    texts: list[str] = []
    calls: list[ToolCallOut] = []
    thinking: list[dict[str, Any]] = []
    for block in data.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            args = block.get("input")
            calls.append(
                ToolCallOut(
                    id=str(block.get("id") or f"toolu_{len(calls)}"),
                    name=str(block.get("name") or ""),
                    arguments=args if isinstance(args, dict) else {},
                    arguments_error=None
                    if isinstance(args, dict)
                    else "the arguments must be a JSON object",
                )
            )
        elif kind in THINKING_BLOCKS:
            thinking.append(block)
    model = str(data.get("model") or model_sent)
    stop = data.get("stop_reason")
    if stop == "refusal":
        partial = "".join(texts).strip()
        raise ProviderError(
            "other",
            f"{model} declined to answer (stop_reason refusal)"
            + (f"; it had said: {partial[:300]}" if partial else ""),
        )
    u = data.get("usage") or {}
    written = int(u.get("cache_creation_input_tokens") or 0)
    read = int(u.get("cache_read_input_tokens") or 0)
    fresh = int(u.get("input_tokens") or 0)
    out = int(u.get("output_tokens") or 0)
    usage = ModelUsage(
        input_tokens=fresh + written + read,  # all the input, as the other providers count it
        output_tokens=out,
        cached_tokens=read,
        cache_write_tokens=written,
        cost_usd=claude_cost(model, fresh, written, read, out),
    )
    return ModelResponse(
        text="".join(texts),
        tool_calls=calls,
        finish_reason=FINISH.get(str(stop), str(stop) if stop else None),
        usage=usage,
        model=model,
        raw=data,
        thinking=thinking,
    )
