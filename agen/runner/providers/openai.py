"""OpenAI chat completions over httpx: api.openai.com or any OpenAI-compatible server.

Ollama, llama.cpp server, vLLM and LM Studio all speak this API at their ``baseUrl``.
Direct OpenAI gets ``max_completion_tokens``; every other server gets ``max_tokens``.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

from agen.runner.providers._http import Endpoint, HttpProvider
from agen.runner.providers.base import (
    THINKING_KEY,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    ProviderError,
    ToolCallOut,
    classify_status,
    parse_arguments,
)

OPENAI_URL = "https://api.openai.com/v1"
# Requests in flight per provider (x-agen/harness.json maxInFlight). More runs wait on a semaphore,
# never in httpcore's pool, which has a connection for each request let through: the pool's
# request-to-connection assignment is O(queued x connections) per event, which made 1,000 runs
# waiting on one provider CPU-bound (~45 s for 1,000 half-second calls) and pool-timed-out the rest.
MAX_IN_FLIGHT = 100


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


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

    def body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model or self.default_model,
            "messages": [  # another provider's reasoning blocks are no chat-completions field
                {k: v for k, v in m.items() if k != THINKING_KEY} if THINKING_KEY in m else m
                for m in request.messages
            ],
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

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.post(self.body(request))

    async def post(self, body: dict[str, Any]) -> ModelResponse:
        resp = await self.endpoint.post("/chat/completions", body)
        if resp.status_code >= 400:
            text = resp.text[:2000]
            raise ProviderError(
                classify_status(resp.status_code, text),
                f"{self.name} answered HTTP {resp.status_code} from {self.base_url}: {text[:500]}",
                status=resp.status_code,
                retry_after_s=parse_retry_after(resp.headers.get("retry-after")),
            )
        try:
            data = resp.json()
        except ValueError as e:
            raise ProviderError(
                "retryable", f"{self.name}: the answer from {self.base_url} is not JSON"
            ) from e
        return parse_completion(data, body.get("model", ""))


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
