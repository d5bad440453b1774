"""A real local OpenAI-compatible HTTP server with scripted answers, for tests and benchmarks.

Starlette + uvicorn on 127.0.0.1 (a free port), run in its own thread so both sync and
async code can use it. Each request takes the next scripted ``Reply`` (optionally only
for one model): text, tool calls, usage, cost, an HTTP error with Retry-After, an empty
answer, a cut-off answer. Every request body is recorded. ``latency_s`` delays every
answer (for "many runs waiting on a slow model"). ``/api/tags`` answers like Ollama when
``ollama_models`` is set.

    with OpenAIServer() as srv:
        srv.script(Reply(status=429, retry_after="0"), Reply(text="hi"))
        ... base_url=srv.base_url ...
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agen.testing.server import ThreadServer


@dataclass
class Reply:
    """One scripted answer. ``status`` >= 400 answers with an error body instead."""

    text: str | None = "ok"
    tool_calls: list[dict[str, Any]] | None = None  # [{"name", "arguments": {...}, "id"?}]
    prompt_tokens: int = 10
    completion_tokens: int = 5
    cached_tokens: int = 0
    cost: float | None = None
    finish_reason: str | None = None
    status: int = 200
    retry_after: str | None = None
    error: str = "scripted error"
    model: str | None = None  # the model reported as serving; default: the one requested
    for_model: str | None = None  # only answer requests for this model
    delay_s: float = 0.0

    def body(self, model: str, n: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            import json

            message["tool_calls"] = [
                {
                    "id": c.get("id") or f"call_{n}_{i}",
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": c["arguments"]
                        if isinstance(c["arguments"], str)
                        else json.dumps(c.get("arguments") or {}),
                    },
                }
                for i, c in enumerate(self.tool_calls)
            ]
        finish = self.finish_reason or ("tool_calls" if self.tool_calls else "stop")
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
        }
        if self.cost is not None:
            usage["cost"] = self.cost
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model or model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }


def empty() -> Reply:
    return Reply(text="", tool_calls=None)


def cut_off(text: str = "") -> Reply:
    return Reply(text=text, finish_reason="length")


@dataclass
class OpenAIServer:
    default: Reply = field(default_factory=Reply)
    latency_s: float = 0.0
    ollama_models: list[str] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        # Requests being answered now and the most at once; clear ``gate`` to hold every answer
        # until it is set again (a test sees how many requests a client lets through at once).
        self.in_flight = 0
        self.peak_in_flight = 0
        self.gate = threading.Event()
        self.gate.set()
        self._http: ThreadServer | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next(self, model: str) -> Reply:
        with self._lock:
            for i, r in enumerate(self._queue):
                if r.for_model is None or r.for_model == model:
                    del self._queue[i]
                    return r
        return self.default

    async def _chat(self, request: Request) -> Response:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if not self.gate.is_set():
                await asyncio.to_thread(self.gate.wait)
            return await self._answer(request)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _answer(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            n = len(self.requests)
        model = str(body.get("model") or "")
        reply = self._next(model)
        delay = reply.delay_s or self.latency_s
        if delay:
            await asyncio.sleep(delay)
        if reply.status >= 400:
            headers = {"retry-after": reply.retry_after} if reply.retry_after is not None else None
            return JSONResponse(
                {"error": {"message": reply.error, "code": reply.status}},
                reply.status,
                headers=headers,
            )
        return JSONResponse(reply.body(model, n))

    async def _tags(self, request: Request) -> Response:
        if self.ollama_models is None:
            return JSONResponse({"error": "not ollama"}, 404)
        return JSONResponse({"models": [{"name": m, "model": m} for m in self.ollama_models]})

    def start(self) -> OpenAIServer:
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/api/tags", self._tags, methods=["GET"]),
            ]
        )
        self._http = ThreadServer(
            app, name="agen-openai-test-server", timeout_keep_alive=30, backlog=4096
        ).start()
        self.port = self._http.port
        return self

    def stop(self) -> None:
        if self._http is not None:
            self._http.stop()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> OpenAIServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)
