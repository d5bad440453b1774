"""A strict local stub of the Gemini API (generateContent and streamGenerateContent): every request
is checked against the `google-genai` SDK's own types (a test-only dependency) and the API's
rules, and answers are scripted.

The SDK's types are pydantic models that take the REST JSON as it is (camelCase aliases, unknown
keys forbidden, bytes as base64 in JSON mode), so each field of the request body is validated with
``model_validate_json`` against the type the SDK sends it as: ``contents`` and ``systemInstruction``
as ``Content``, ``tools`` as ``Tool``, ``toolConfig`` as ``ToolConfig``, ``generationConfig`` as
``GenerationConfig``; any other top-level key is refused. On top of the types, the API's rules:
roles are ``user`` and ``model``, a part carries exactly one kind of data, each model turn with
function calls is answered by the next user turn with as many ``functionResponse`` parts, of the
same names (and ids, when the calls had ids); a ``thoughtSignature`` comes back unchanged on the
part the stub signed (or is Google's documented value for history from another model), and a
function-calling model turn carries its signature on its first call, as Gemini 3 requires; an
inline image's bytes are an image of its MIME type. A request that breaks any is answered 400 with
an ``INVALID_ARGUMENT`` error like the real API and listed in ``invalid``. Each answer is itself
validated as a ``GenerateContentResponse``.

Streamed (``:streamGenerateContent?alt=sse``), the answer comes as server-sent events, each a
GenerateContentResponse validated by the SDK: text and thoughts word by word (a part's signature
on its last piece), each function call whole, the finish reason and usage in the last event.
``Reply.hold`` keeps back all after the first event until set; ``Reply.break_stream`` ends the
stream after it.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from google.genai import types as gt
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from agen.testing.stub import MAGIC, ScriptedServer, is_media, sse_answer, words

FIELDS: dict[str, type[BaseModel]] = {
    "systemInstruction": gt.Content,
    "toolConfig": gt.ToolConfig,
    "generationConfig": gt.GenerationConfig,
}
LISTS: dict[str, type[BaseModel]] = {
    "contents": gt.Content,
    "tools": gt.Tool,
    "safetySettings": gt.SafetySetting,
}
DATA = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
)
FOREIGN = "skip_thought_signature_validator"
INLINE_TYPES = {*MAGIC, "image/heic", "image/heif", "text/plain", "text/markdown", "text/csv"}
NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$")


def _validate(value: Any, kind: type[BaseModel], path: str) -> list[str]:
    try:
        kind.model_validate_json(json.dumps(value))
    except ValidationError as e:
        return [
            f"{path}.{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in e.errors()
        ]
    return []


def type_problems(body: Any) -> list[str]:
    """Where the body breaks the SDK's types."""
    if not isinstance(body, dict):
        return ["$: expected an object"]
    out = [f"$.{k}: not a field of the request" for k in body if k not in {*FIELDS, *LISTS}]
    if not body.get("contents"):
        out.append("$.contents: required, and not empty")
    for key, kind in FIELDS.items():
        if key in body:
            out.extend(_validate(body[key], kind, f"$.{key}"))
    for key, kind in LISTS.items():
        if key in body:
            if not isinstance(body[key], list):
                out.append(f"$.{key}: expected a list")
                continue
            for i, item in enumerate(body[key]):
                out.extend(_validate(item, kind, f"$.{key}[{i}]"))
    return out


def _bare(part: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in part.items() if k != "thoughtSignature"}, sort_keys=True)


def api_rules(body: dict[str, Any], signed: dict[str, str], model: str) -> list[str]:
    """The Gemini API's rules beyond the types (signatures on calls: Gemini 3's)."""
    out: list[str] = []
    contents = body["contents"]
    for t in body.get("tools") or []:
        for d in t.get("functionDeclarations") or []:
            if not NAME.match(str(d.get("name"))):
                out.append(f"tools: function name {d.get('name')!r} is not a valid name")
            if "parameters" in d and "parametersJsonSchema" in d:
                out.append("tools: parameters and parametersJsonSchema are exclusive")
    for i, c in enumerate(contents):
        where = f"contents[{i}]"
        if c.get("role") not in ("user", "model"):
            out.append(f"{where}.role: must be user or model, not {c.get('role')!r}")
        parts = c.get("parts") or []
        if not parts:
            out.append(f"{where}.parts: must not be empty")
        for j, p in enumerate(parts):
            kinds = [k for k in DATA if k in p]
            if len(kinds) != 1:
                out.append(f"{where}.parts[{j}]: needs exactly one kind of data, has {kinds}")
            sig = p.get("thoughtSignature")
            if sig is not None and sig != FOREIGN and signed.get(sig) != _bare(p):
                out.append(f"{where}.parts[{j}]: a thought signature was changed or made up")
            blob = p.get("inlineData")
            if isinstance(blob, dict):
                out.extend(_inline(blob, f"{where}.parts[{j}].inlineData"))
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        if not calls:
            continue
        if c.get("role") != "model":
            out.append(f"{where}: only the model makes function calls")
        first = next(p for p in parts if "functionCall" in p)
        if model.startswith("gemini-3") and "thoughtSignature" not in first:
            out.append(f"{where}: the first function call has no thought signature")
        nxt = contents[i + 1]["parts"] if i + 1 < len(contents) else None
        if nxt is None:
            continue
        answers = [p["functionResponse"] for p in nxt if "functionResponse" in p]
        if [a.get("name") for a in answers] != [fc.get("name") for fc in calls]:
            out.append(f"contents[{i + 1}]: function responses do not answer the calls in order")
        ids = [fc.get("id") for fc in calls]
        if any(ids) and [a.get("id") for a in answers] != ids:
            out.append(f"contents[{i + 1}]: function responses do not name the calls' ids")
    return out


def _inline(blob: dict[str, Any], where: str) -> list[str]:
    mime = str(blob.get("mimeType") or "")
    if mime not in INLINE_TYPES:
        return [f"{where}.mimeType: {mime!r} is not supported"]
    data = base64.b64decode(str(blob.get("data") or ""))
    if mime in MAGIC and not is_media(mime, data):
        return [f"{where}: the bytes are not {mime}"]
    return []


@dataclass
class Reply:
    """One scripted answer. ``status`` >= 400 answers with an error body instead."""

    text: str | None = "ok"
    tool_calls: list[dict[str, Any]] | None = None  # [{"name", "arguments": {...}, "id"?}]
    thought: str | None = None  # a thought summary part before the rest
    signed: bool = True  # sign the first call (or the last text part), as Gemini 3 does
    call_ids: bool = True  # the calls carry ids (Gemini 3 does)
    prompt_tokens: int = 10
    output_tokens: int = 5
    thoughts_tokens: int = 0
    cached_tokens: int = 0
    finish_reason: str | None = None
    block_reason: str | None = None  # the prompt is blocked: no candidate
    status: int = 200
    retry_after: str | None = None
    retry_delay: str | None = None  # a google.rpc.RetryInfo in a 429's body ("7s")
    error_message: str = "scripted error"
    model: str | None = None
    hold: threading.Event | None = None
    break_stream: bool = False

    def body(self, model: str, n: int, signed: dict[str, str]) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "promptTokenCount": self.prompt_tokens,
            "totalTokenCount": self.prompt_tokens + self.output_tokens + self.thoughts_tokens,
        }
        if self.cached_tokens:
            usage["cachedContentTokenCount"] = self.cached_tokens
        top = {"usageMetadata": usage, "modelVersion": self.model or model, "responseId": f"r{n}"}
        if self.block_reason:
            return {"promptFeedback": {"blockReason": self.block_reason}, **top}
        usage["candidatesTokenCount"] = self.output_tokens
        if self.thoughts_tokens:
            usage["thoughtsTokenCount"] = self.thoughts_tokens
        parts: list[dict[str, Any]] = []
        if self.thought:
            parts.append({"text": self.thought, "thought": True})
        if self.text:
            parts.append({"text": self.text})
        for i, c in enumerate(self.tool_calls or []):
            call: dict[str, Any] = {"name": c["name"], "args": c.get("arguments") or {}}
            if self.call_ids:
                call["id"] = c.get("id") or f"fc_{n}_{i}"
            parts.append({"functionCall": call})
        if self.signed and parts:
            target = next((p for p in parts if "functionCall" in p), parts[-1])
            signature = base64.b64encode(f"sig-{n}-{len(signed)}".encode()).decode()
            signed[signature] = _bare(target)
            target["thoughtSignature"] = signature
        candidate: dict[str, Any] = {
            "finishReason": self.finish_reason or "STOP",
            "index": 0,
        }
        if parts:
            candidate["content"] = {"role": "model", "parts": parts}
        return {"candidates": [candidate], **top}


def stream_chunks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The streamed chunks that add up to ``answer`` (a GenerateContentResponse)."""
    top = {k: v for k, v in answer.items() if k not in ("candidates", "usageMetadata")}
    usage = answer["usageMetadata"]
    partial = {"promptTokenCount": usage["promptTokenCount"]}
    if not answer.get("candidates"):
        return [answer]
    cand = answer["candidates"][0]
    pieces: list[dict[str, Any]] = []
    for part in (cand.get("content") or {}).get("parts") or []:
        if "text" not in part:
            pieces.append(part)
            continue
        pieces_of = words(part["text"])
        for k, w in enumerate(pieces_of):
            piece = {**part, "text": w}
            if k < len(pieces_of) - 1:
                piece.pop("thoughtSignature", None)
            pieces.append(piece)
    out = [
        {
            "candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}],
            "usageMetadata": partial,
            **top,
        }
        for p in pieces
    ]
    last = {k: v for k, v in cand.items() if k != "content"}
    out.append({"candidates": [last], "usageMetadata": usage, **top})
    return out


def _error(
    status: int, message: str, details: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    names = {400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": names.get(status, "INTERNAL"),
    }
    if details:
        error["details"] = details
    return {"error": error}


@dataclass
class GeminiServer(ScriptedServer[Reply]):
    default: Reply = field(default_factory=Reply)
    paths: list[str] = field(default_factory=list)  # "<model>:<method>?<query>"

    thread_name = "agen-gemini-test-server"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.signed: dict[str, str] = {}  # signature -> the part it was given on

    def _problems(
        self, body: Any, headers: dict[str, str], model: str, method: str, query: str
    ) -> list[str]:
        problems = type_problems(body)
        if method not in ("generateContent", "streamGenerateContent"):
            problems.append(f"no method {method!r}")
        if method == "streamGenerateContent" and query != "alt=sse":
            problems.append("a streamed call without alt=sse")
        if "x-goog-api-key" in headers and not headers["x-goog-api-key"]:
            problems.append("an empty x-goog-api-key")
        if not problems:
            problems = api_rules(body, self.signed, model)
        return problems

    async def _generate(self, request: Request) -> Response:
        body = await request.json()
        headers = dict(request.headers)
        model, _, method = request.path_params["rest"].partition(":")
        query = request.url.query
        with self._lock:
            self.requests.append(body)
            self.paths.append(f"{model}:{method}" + (f"?{query}" if query else ""))
            self.headers.append(headers)
            n = len(self.requests)
            problems = self._problems(body, headers, model, method, query)
            self.invalid.extend(f"request {n}: {p}" for p in problems)
            reply = self.next_reply()
        if problems:
            return JSONResponse(_error(400, "; ".join(problems)), 400)
        if reply.status >= 400:
            extra = {"retry-after": reply.retry_after} if reply.retry_after is not None else None
            details = None
            if reply.retry_delay:
                details = [
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": reply.retry_delay,
                    }
                ]
            return JSONResponse(
                _error(reply.status, reply.error_message, details), reply.status, headers=extra
            )
        with self._lock:
            answer = reply.body(model, n, self.signed)
        gt.GenerateContentResponse.model_validate_json(json.dumps(answer))  # a real answer
        if method == "generateContent":
            return JSONResponse(answer)
        chunks = stream_chunks(answer)
        for chunk in chunks:
            gt.GenerateContentResponse.model_validate_json(json.dumps(chunk))
        return sse_answer(chunks, reply.hold, reply.break_stream, last=None)

    def routes(self) -> list[BaseRoute]:
        return [Route("/v1beta/models/{rest:path}", self._generate, methods=["POST"])]
