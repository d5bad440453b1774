"""OpenAI chat completions over httpx: api.openai.com or any OpenAI-compatible server.

Ollama, llama.cpp server, vLLM and LM Studio all speak this API at their ``baseUrl``.
Direct OpenAI gets ``max_completion_tokens``; every other server gets ``max_tokens``.

Streamed (``stream: true`` with ``stream_options.include_usage``), the chunks are assembled into
the ``chat.completion`` body the same call without streaming answers (content, tool calls from
their argument pieces by index, finish reason, the usage chunk), and that body is parsed by the
same ``parse_completion``: a streamed turn is checkpointed exactly like an unstreamed one.
"""

from __future__ import annotations

from typing import Any

from agen.runner.providers._files import IMAGE_TYPES, PDF, files_of, refuse, without_files
from agen.runner.providers._http import MAX_IN_FLIGHT, Endpoint, HttpProvider
from agen.runner.providers.base import (
    ATTACHMENTS_KEY,
    THINKING_KEY,
    Delta,
    DeltaSink,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    ToolCallOut,
    parse_arguments,
)

OPENAI_URL = "https://api.openai.com/v1"


class OpenAIProvider(HttpProvider):
    name = "openai"

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str = "",
        base_url: str | None = None,
        timeout_s: float = 120.0,
        extra_headers: dict[str, str] | None = None,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self.base_url = (base_url or OPENAI_URL).rstrip("/")
        self.default_model = model
        self.api_key = api_key
        self.direct = "api.openai.com" in self.base_url
        headers = {"content-type": "application/json", **(extra_headers or {})}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self.endpoint = Endpoint(
            self.name, self.base_url, headers, timeout_s=timeout_s, max_in_flight=max_in_flight
        )

    @property
    def takes_pdf(self) -> bool:
        """PDFs go as ``file`` content parts, which OpenAI (and OpenRouter) take; other servers
        speaking the API (Ollama, vLLM, llama.cpp) take images but no files."""
        return self.direct

    def _user_content(self, m: dict[str, Any], model: str) -> list[dict[str, Any]]:
        """A user message with files as content parts: its text, then images as ``image_url``
        (a data URL), PDFs as ``file`` parts, text files as text."""
        parts: list[dict[str, Any]] = []
        if m.get("content"):
            parts.append({"type": "text", "text": str(m["content"])})
        for f in files_of(m):
            if f.media_type in IMAGE_TYPES:
                parts.append({"type": "image_url", "image_url": {"url": f.data_url}})
            elif f.media_type == PDF and self.takes_pdf:
                parts.append(
                    {"type": "file", "file": {"filename": f.name, "file_data": f.data_url}}
                )
            elif f.media_type == PDF:
                raise refuse(
                    self.name,
                    model,
                    f,
                    f"the server at {self.base_url} takes images but no PDF files in the "
                    "chat-completions API; convert the PDF to text or images",
                )
            else:
                parts.append({"type": "text", "text": f.framed()})
        return parts

    def _message(self, m: dict[str, Any], model: str) -> dict[str, Any]:
        if THINKING_KEY in m:  # another provider's reasoning blocks are no chat-completions field
            m = {k: v for k, v in m.items() if k != THINKING_KEY}
        if ATTACHMENTS_KEY in m:
            m = {**without_files(m), "content": self._user_content(m, model)}
        return m

    def body(self, request: ModelRequest) -> dict[str, Any]:
        model = request.model or self.default_model
        body: dict[str, Any] = {
            "model": model,
            "messages": [self._message(m, model) for m in request.messages],
        }
        if request.tools:
            body["tools"] = request.tools
            if request.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = request.parallel_tool_calls
        if request.tool_choice is not None and request.tools:
            body["tool_choice"] = request.tool_choice
        if request.max_tokens is not None:
            body["max_completion_tokens" if self.direct else "max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.reasoning_effort:
            body["reasoning_effort"] = request.reasoning_effort
        return body

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        return await self.post(self.body(request), on_delta)

    async def post(self, body: dict[str, Any], on_delta: DeltaSink | None = None) -> ModelResponse:
        if on_delta is None:
            data = await self.post_json("/chat/completions", body)
        else:
            chunks = ChunkAssembler()
            streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
            await self.stream("/chat/completions", streamed, chunks, on_delta, done="[DONE]")
            data = chunks.completion()
        return parse_completion(data, body.get("model", ""))


class ChunkAssembler:
    """``chat.completion.chunk`` objects in, the ``chat.completion`` they add up to out."""

    def __init__(self) -> None:
        self.top: dict[str, Any] = {}
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None
        self.finished = False  # a finish reason came: the answer is whole

    def add(self, chunk: dict[str, Any]) -> list[Delta]:
        """Take one chunk; the pieces of text it carries, to show as they come."""
        out: list[Delta] = []
        for key, value in chunk.items():
            if key not in ("choices", "object", "usage"):
                self.top[key] = value
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if isinstance(text, str) and text:
                self.content.append(text)
                out.append(Delta(text))
            thought = delta.get("reasoning") or delta.get("reasoning_content")
            if isinstance(thought, str) and thought:
                self.reasoning.append(thought)
                out.append(Delta(thought, "thinking"))
            for piece in delta.get("tool_calls") or []:
                call = self.calls.setdefault(
                    int(piece.get("index", len(self.calls))),
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if piece.get("id"):
                    call["id"] = piece["id"]
                fn = piece.get("function") or {}
                call["function"]["name"] += fn.get("name") or ""
                call["function"]["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
                self.finished = True
        return out

    def completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.content) if self.content else None,
        }
        if self.reasoning:
            message["reasoning"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        data: dict[str, Any] = {
            **self.top,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish}],
        }
        if self.usage is not None:
            data["usage"] = self.usage
        return data


def parse_completion(data: dict[str, Any], model_sent: str) -> ModelResponse:
    """A chat.completion JSON body as a ModelResponse (usage, cached tokens, cost when reported)."""
    choices = data.get("choices") or []
    message: dict[str, Any] = (choices[0].get("message") if choices else None) or {}
    finish = choices[0].get("finish_reason") if choices else None
    calls: list[ToolCallOut] = []
    for i, c in enumerate(message.get("tool_calls") or []):
        fn = c.get("function") or {}
        args, problem = parse_arguments(fn.get("arguments"))
        calls.append(
            ToolCallOut(
                id=str(c.get("id") or f"call_{i}"),
                name=str(fn.get("name") or ""),
                arguments=args,
                arguments_error=problem,
            )
        )
    u = data.get("usage") or {}
    details = u.get("prompt_tokens_details") or {}
    cost = u.get("cost")
    usage = ModelUsage(
        input_tokens=int(u.get("prompt_tokens") or 0),
        output_tokens=int(u.get("completion_tokens") or 0),
        cached_tokens=int(details.get("cached_tokens") or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    return ModelResponse(
        text=text,
        tool_calls=calls,
        finish_reason=finish,
        usage=usage,
        model=str(data.get("model") or model_sent),
        raw=data,
    )
