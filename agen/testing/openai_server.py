"""A real local OpenAI-compatible HTTP server with scripted answers, for tests and benchmarks.

Starlette + uvicorn on 127.0.0.1 (a free port), run in its own thread so both sync and
async code can use it. Each request takes the next scripted ``Reply`` (optionally only
for one model): text, tool calls, usage, cost, an HTTP error with Retry-After, an empty
answer, a cut-off answer. Every request body is recorded. ``latency_s`` delays every
answer (for "many runs waiting on a slow model"). ``/api/tags`` answers like Ollama when
``ollama_models`` is set. A request with ``stream: true`` is answered with server-sent
``chat.completion.chunk`` events that add up to the same completion (the text word by word, each
tool call's arguments in two pieces, the usage chunk when ``stream_options.include_usage``);
``Reply.hold`` keeps the rest of a stream back after its first chunk until the event is set, and
``Reply.break_stream`` ends the stream before its finish reason (a connection lost mid-answer).
User messages with content parts (images, files) are checked against the ``openai`` SDK's types
and the data they carry (``content_problems``); a request that breaks them is answered 400 and
listed in ``invalid``.

    with OpenAIServer() as srv:
        srv.script(Reply(status=429, retry_after="0"), Reply(text="hi"))
        ... base_url=srv.base_url ...
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from agen.testing.stub import ScriptedServer, is_media, sse_answer, words


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
    hold: threading.Event | None = None  # streamed: the rest waits after the first chunk
    break_stream: bool = False  # streamed: end after the first chunk, with no finish reason

    def body(self, model: str, n: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
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
            "created": STARTED_S + n,
            "model": self.model or model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }


STARTED_S = int(time.time())


def stream_chunks(answer: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects that add up to ``answer`` (a chat.completion)."""
    top = {k: answer[k] for k in ("id", "created", "model")}
    choice = answer["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        c = {"index": 0, "delta": delta, "finish_reason": finish}
        return {**top, "object": "chat.completion.chunk", "choices": [c]}

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": p}) for p in words(message.get("content") or "")]
    for i, call in enumerate(message.get("tool_calls") or []):
        args = call["function"]["arguments"]
        half = len(args) // 2
        first = {"name": call["function"]["name"], "arguments": args[:half]}
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": i, "id": call["id"], "type": "function", "function": first}
                    ]
                }
            )
        )
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": args[half:]}}]}))
    out.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        out.append(
            {**top, "object": "chat.completion.chunk", "choices": [], "usage": answer["usage"]}
        )
    return out


_DATA_URL = re.compile(r"^data:([a-z]+/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$")
_PART_KEYS = {
    "text": {"type", "text"},
    "image_url": {"type", "image_url"},
    "file": {"type", "file"},
    "input_audio": {"type", "input_audio"},
}


def _data_url(url: Any, kinds: tuple[str, ...], where: str) -> list[str]:
    """A data URL of one of ``kinds`` whose bytes are what it says."""
    found = _DATA_URL.match(str(url))
    if found is None:
        return [f"{where}: not a base64 data URL"]
    kind, data = found.groups()
    if kind not in kinds:
        return [f"{where}: {kind} is not one of {', '.join(kinds)}"]
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        return [f"{where}: the data is not base64"]
    return [] if is_media(kind, raw) else [f"{where}: the bytes are not {kind}"]


def content_problems(body: Any) -> list[str]:
    """Where the user messages' content parts break the chat-completions API: each part is checked
    against the ``openai`` SDK's own type (``ChatCompletionContentPartParam``; a test-only
    dependency, imported only when a request has content parts), no key outside its type, and an
    image or file's data URL holds the bytes it names."""
    messages = body.get("messages") if isinstance(body, dict) else None
    listed = [
        (i, m["content"])
        for i, m in enumerate(messages or [])
        if isinstance(m, dict) and isinstance(m.get("content"), list)
    ]
    if not listed:
        return []
    from openai.types.chat import ChatCompletionContentPartParam
    from pydantic import TypeAdapter, ValidationError

    part_type: TypeAdapter[Any] = TypeAdapter(cast(Any, ChatCompletionContentPartParam))
    out: list[str] = []
    for i, parts in listed:
        for j, part in enumerate(parts):
            where = f"messages[{i}].content[{j}]"
            try:
                part_type.validate_python(part)
            except ValidationError as e:
                out.append(f"{where}: {e.errors()[0]['msg']}")
                continue
            kind = part.get("type")
            extra = set(part) - _PART_KEYS.get(kind, set())
            if extra:
                out.append(f"{where}: {sorted(extra)} not fields of a {kind} part")
            if kind == "image_url":
                kinds = ("image/png", "image/jpeg", "image/gif", "image/webp")
                out += _data_url(part["image_url"].get("url"), kinds, f"{where}.image_url.url")
            elif kind == "file":
                f = part["file"]
                if not f.get("filename"):
                    out.append(f"{where}.file: a file sent as data needs its filename")
                out += _data_url(
                    f.get("file_data"), ("application/pdf",), f"{where}.file.file_data"
                )
    return out


def empty() -> Reply:
    return Reply(text="", tool_calls=None)


def cut_off(text: str = "") -> Reply:
    return Reply(text=text, finish_reason="length")


@dataclass
class OpenAIServer(ScriptedServer[Reply]):
    default: Reply = field(default_factory=Reply)
    latency_s: float = 0.0
    ollama_models: list[str] | None = None
    # time.perf_counter() when each streamed answer's first text was handed to the server
    first_text_sent: list[float] = field(default_factory=list)

    thread_name = "agen-openai-test-server"
    server_config = {"timeout_keep_alive": 30, "backlog": 4096}

    def __post_init__(self) -> None:
        super().__post_init__()
        # Requests being answered now and the most at once; clear ``gate`` to hold every answer
        # until it is set again (a test sees how many requests a client lets through at once).
        self.in_flight = 0
        self.peak_in_flight = 0
        self.gate = threading.Event()
        self.gate.set()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def takes(self, reply: Reply, model: str) -> bool:
        return reply.for_model is None or reply.for_model == model

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
        problems = content_problems(body)
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            n = len(self.requests)
            self.invalid.extend(f"request {n}: {p}" for p in problems)
        if problems:
            error = {"message": "; ".join(problems), "type": "invalid_request_error"}
            return JSONResponse({"error": error}, 400)
        model = str(body.get("model") or "")
        reply = self.next_reply(model)
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
        answer = reply.body(model, n)
        if body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = stream_chunks(answer, usage)
            return sse_answer(chunks, reply.hold, reply.break_stream, sent=self.first_text_sent)
        return JSONResponse(answer)

    async def _tags(self, request: Request) -> Response:
        if self.ollama_models is None:
            return JSONResponse({"error": "not ollama"}, 404)
        return JSONResponse({"models": [{"name": m, "model": m} for m in self.ollama_models]})

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/api/tags", self._tags, methods=["GET"]),
        ]
