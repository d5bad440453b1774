"""A strict local stub of Anthropic's Messages API: every request is checked against the `anthropic`
SDK's own request types (a test-only dependency) and the API's rules, and answers are scripted.

Pydantic's TypeAdapter over the SDK's TypedDicts validates ``Iterable`` fields lazily and lets
unknown keys through, so ``check`` walks the SDK's type hints itself: required keys, no unknown
key, literals, unions, every list item. On top of the types, the rules the API enforces: roles
alternate starting with the user, each tool_use is answered by a tool_result in the next user
message (results first), thinking blocks come back unchanged with the signature the stub gave,
a tool-use turn under extended thinking comes back with its thinking, at most 4 cache breakpoints,
a base64 image or PDF holds the bytes its media type names.
A request that breaks any is answered 400 like the real API and listed in ``invalid``.
Each answer the stub sends is itself validated as an ``anthropic.types.Message``.

A request with ``stream: true`` is checked against the SDK's streaming request type and answered
with the Messages API's server-sent events, each validated as an ``anthropic.types.
RawMessageStreamEvent``, adding up to the same Message: text and thinking word by word, a tool's
input JSON in two ``input_json_delta`` pieces, the signature in a ``signature_delta``, the stop
reason and output tokens in ``message_delta``. ``Reply.hold`` keeps back all but the first event
until set; ``Reply.overloaded_mid_stream`` sends an ``overloaded_error`` event after the first text.
"""

from __future__ import annotations

import base64
import collections.abc
import json
import threading
import types
import typing
from dataclasses import dataclass, field
from typing import Any

import typing_extensions
from anthropic import types as at
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming,
    MessageCreateParamsStreaming,
)
from pydantic import TypeAdapter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from agen.testing.stub import ScriptedServer, is_media, sse_answer, words

STREAM_EVENT: TypeAdapter[Any] = TypeAdapter(typing.cast(Any, at.RawMessageStreamEvent))

_LISTS = (collections.abc.Iterable, collections.abc.Sequence, list)
_MAPS = (dict, collections.abc.Mapping)


def _unwrap(tp: Any) -> tuple[Any, bool | None]:
    """(the type inside Required/NotRequired/Annotated, True/False when marked, else None)."""
    marked: bool | None = None
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Required:
            marked, tp = True, typing.get_args(tp)[0]
        elif origin is typing.NotRequired:
            marked, tp = False, typing.get_args(tp)[0]
        elif origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        else:
            return tp, marked


def check(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Where ``value`` breaks the SDK type ``tp`` (empty: it fits)."""
    tp, _ = _unwrap(tp)
    if tp is Any or tp is object:
        return []
    if tp is None or tp is types.NoneType:
        return [] if value is None else [f"{path}: expected null"]
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        problems: list[str] = []
        for option in args:
            found = check(value, option, path)
            if not found:
                return []
            problems.extend(found)
        # the closest branch's complaint is the useful one
        return [min(problems, key=len) if problems else f"{path}: no type fits"]
    if origin is typing.Literal:
        return [] if value in args else [f"{path}: {value!r} is not one of {list(args)}"]
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: expected an object ({tp.__name__})"]
        hints = typing.get_type_hints(tp, include_extras=True)
        out = [f"{path}.{k}: not a field of {tp.__name__}" for k in value if k not in hints]
        # __required_keys__ counts each base's totality (the streaming params extend a total=False
        # base with a total class of one Required key)
        required = getattr(tp, "__required_keys__", None)
        total = getattr(tp, "__total__", True)
        for key, hint in hints.items():
            inner, marked = _unwrap(hint)
            if key not in value:
                needed = (
                    key in required
                    if required is not None
                    else marked or (marked is None and total)
                )
                if needed:
                    out.append(f"{path}.{key}: required by {tp.__name__}")
                continue
            out.extend(check(value[key], inner, f"{path}.{key}"))
        return out
    if origin in _LISTS or getattr(origin, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        return [p for i, item in enumerate(value) for p in check(item, args[0], f"{path}[{i}]")]
    if origin in _MAPS or tp in _MAPS:
        return [] if isinstance(value, dict) else [f"{path}: expected an object"]
    if tp is bool:
        return [] if isinstance(value, bool) else [f"{path}: expected a boolean"]
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected an integer"]
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected a number"]
    if tp is str:
        return [] if isinstance(value, str) else [f"{path}: expected a string"]
    return [f"{path}: the stub cannot check the type {tp!r}"]


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _media(source: dict[str, Any], where: str) -> list[str]:
    """A base64 image or PDF holds the bytes its media type names, within the API's image limit."""
    kind = str(source.get("media_type"))
    try:
        data = base64.b64decode(str(source.get("data")), validate=True)
    except ValueError:
        return [f"{where}: the data is not base64"]
    if not is_media(kind, data):
        return [f"{where}: the bytes are not {kind}"]
    if kind.startswith("image/") and len(data) > 5 * 1024 * 1024:
        return [f"{where}: an image may have at most 5 MB"]
    return []


def api_rules(body: dict[str, Any], signatures: dict[str, str]) -> list[str]:
    """The Messages API's rules beyond the types."""
    out: list[str] = []
    msgs = body.get("messages") or []
    if msgs and msgs[0].get("role") != "user":
        out.append("messages[0]: the first message must be the user's")
    for i in range(1, len(msgs)):
        if msgs[i].get("role") == msgs[i - 1].get("role"):
            out.append(f"messages[{i}]: roles must alternate (two {msgs[i].get('role')} in a row)")
    marks = sum(1 for b in body.get("system") or [] if isinstance(b, dict) and "cache_control" in b)
    marks += sum(1 for t in body.get("tools") or [] if "cache_control" in t)
    thinking_on = (body.get("thinking") or {}).get("type") == "enabled"
    for i, m in enumerate(msgs):
        blocks = _blocks(m)
        marks += sum(1 for b in blocks if "cache_control" in b)
        for j, b in enumerate(blocks):
            if b.get("type") == "text" and not b.get("text"):
                out.append(f"messages[{i}].content[{j}]: text blocks must be non-empty")
            source = b.get("source") if b.get("type") in ("image", "document") else None
            if isinstance(source, dict) and source.get("type") == "base64":
                out.extend(_media(source, f"messages[{i}].content[{j}]"))
            if b.get("type") == "thinking" and signatures.get(b.get("signature", "")) != b.get(
                "thinking"
            ):
                out.append(f"messages[{i}].content[{j}]: a thinking block was changed or made up")
        if m.get("role") != "assistant":
            continue
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if uses and thinking_on and i == len(msgs) - 2 and blocks[0].get("type") != "thinking":
            out.append(
                f"messages[{i}]: with thinking enabled, the tool-use turn must start with its "
                "thinking block"
            )
        nxt = _blocks(msgs[i + 1]) if i + 1 < len(msgs) else None
        if uses and nxt is not None:
            results = [str(b.get("tool_use_id")) for b in nxt if b.get("type") == "tool_result"]
            if sorted(results) != sorted(uses):
                out.append(f"messages[{i + 1}]: tool results {results} do not answer {uses}")
            if nxt[: len(results)] != [b for b in nxt if b.get("type") == "tool_result"]:
                out.append(f"messages[{i + 1}]: tool_result blocks must come first")
    if marks > 4:
        out.append(f"{marks} cache_control breakpoints: at most 4")
    budget = (body.get("thinking") or {}).get("budget_tokens")
    if isinstance(budget, int) and not 1024 <= budget < int(body.get("max_tokens") or 0):
        out.append("thinking.budget_tokens must be >= 1024 and less than max_tokens")
    if thinking_on and "temperature" in body:
        out.append("temperature may not be set with thinking")
    return out


@dataclass
class Reply:
    """One scripted answer. ``status`` >= 400 answers with an error body instead."""

    text: str | None = "ok"
    tool_calls: list[dict[str, Any]] | None = None  # [{"name", "arguments": {...}, "id"?}]
    thinking: str | None = None  # a thinking block (signed by the stub) before the rest
    input_tokens: int = 10
    output_tokens: int = 5
    cache_creation: int = 0
    cache_read: int = 0
    stop_reason: str | None = None
    status: int = 200
    retry_after: str | None = None
    error_type: str = "api_error"
    model: str | None = None
    hold: threading.Event | None = None
    overloaded_mid_stream: bool = False

    def body(self, model: str, n: int, signatures: dict[str, str]) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if self.thinking is not None:
            signature = f"sig-{n}-{len(signatures)}"
            signatures[signature] = self.thinking
            content.append({"type": "thinking", "thinking": self.thinking, "signature": signature})
        if self.text:
            content.append({"type": "text", "text": self.text})
        for i, c in enumerate(self.tool_calls or []):
            content.append(
                {
                    "type": "tool_use",
                    "id": c.get("id") or f"toolu_{n}_{i}",
                    "name": c["name"],
                    "input": c.get("arguments") or {},
                }
            )
        stop = self.stop_reason or ("tool_use" if self.tool_calls else "end_turn")
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": self.model or model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cache_creation_input_tokens": self.cache_creation,
                "cache_read_input_tokens": self.cache_read,
            },
        }


def stream_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream events that add up to ``message`` (a Messages API answer)."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 1}
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(message["content"]):
        kind = block["type"]
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            first: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": w} for w in words(block["text"])]
        elif kind == "thinking":
            first = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": w} for w in words(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:  # tool_use
            first = {**block, "input": {}}
            text = json.dumps(block["input"])
            half = len(text) // 2
            deltas = [
                {"type": "input_json_delta", "partial_json": part}
                for part in (text[:half], text[half:])
            ]
        out.append({"type": "content_block_start", "index": i, "content_block": first})
        out.extend({"type": "content_block_delta", "index": i, "delta": d} for d in deltas)
        out.append({"type": "content_block_stop", "index": i})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    out.append(
        {"type": "message_delta", "delta": stop, "usage": {"output_tokens": usage["output_tokens"]}}
    )
    out.append({"type": "message_stop"})
    return out


@dataclass
class AnthropicServer(ScriptedServer[Reply]):
    default: Reply = field(default_factory=Reply)

    thread_name = "agen-anthropic-test-server"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.signatures: dict[str, str] = {}

    def _problems(self, body: Any, headers: dict[str, str]) -> list[str]:
        streaming = isinstance(body, dict) and body.get("stream") is True
        kind = MessageCreateParamsStreaming if streaming else MessageCreateParamsNonStreaming
        problems = check(body, kind)
        if not headers.get("anthropic-version"):
            problems.append("header anthropic-version is missing")
        if isinstance(body, dict) and not problems:
            problems = api_rules(body, self.signatures)
        return problems

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        headers = dict(request.headers)
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            n = len(self.requests)
            problems = self._problems(body, headers)
            self.invalid.extend(f"request {n}: {p}" for p in problems)
            reply = self.next_reply()
        if problems:
            error = {"type": "invalid_request_error", "message": "; ".join(problems)}
            return JSONResponse({"type": "error", "error": error}, 400)
        if reply.status >= 400:
            extra = {"retry-after": reply.retry_after} if reply.retry_after is not None else None
            error = {"type": reply.error_type, "message": "scripted error"}
            return JSONResponse({"type": "error", "error": error}, reply.status, headers=extra)
        with self._lock:
            answer = reply.body(str(body.get("model") or ""), n, self.signatures)
        at.Message.model_validate(answer)  # the stub's own answers are real Messages
        if not body.get("stream"):
            return JSONResponse(answer)
        events = stream_events(answer)
        if reply.overloaded_mid_stream:
            first_text = next(i for i, e in enumerate(events) if e["type"] == "content_block_delta")
            error = {"type": "overloaded_error", "message": "Overloaded"}
            events = [*events[: first_text + 1], {"type": "error", "error": error}]
        for event in events:
            if event["type"] != "error":
                STREAM_EVENT.validate_python(event)  # real stream events of the SDK's types
        return sse_answer(events, reply.hold, False, last=None)

    def routes(self) -> list[BaseRoute]:
        return [Route("/v1/messages", self._messages, methods=["POST"])]
