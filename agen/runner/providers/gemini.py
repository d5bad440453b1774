"""Google's Gemini API over httpx2 (no SDK at run time): generativelanguage.googleapis.com or a
gateway at ``baseUrl``.

The run's messages are OpenAI chat dicts (base.py); here they become ``contents`` of ``user`` and
``model`` turns: the system prompt as ``systemInstruction``, tool calls as ``functionCall`` parts,
tool results as ``functionResponse`` parts in one user turn (the API pairs them with the calls in
order, and by id when the model gave ids), tools as ``functionDeclarations`` with their JSON
Schema as it is (``parametersJsonSchema``). Gemini 2.5 and 3 sign their reasoning with
``thoughtSignature`` on the parts they answer with, and Gemini 3 refuses a function-calling turn
sent back without them: a model turn is kept whole (ModelResponse.thinking holds its parts, the
stored raw answer has them) and sent back exactly as it came. A model turn from another provider
(after a fallback) has no signatures; its first call carries the value Google documents for
history moved from elsewhere.

Safety: a prompt the API blocks (``promptFeedback.blockReason``) and an answer it stops
(finishReason SAFETY, RECITATION, PROHIBITED_CONTENT, ...) end the call with an error that names
the reason; the model-turn rules then try the next model and the run ends saying why. 429 and 503
are retried after Retry-After, or the ``RetryInfo`` delay of the error body.

Streamed (``:streamGenerateContent?alt=sse``), each event is a GenerateContentResponse with the
next pieces; they are assembled into the one answer the same call without streaming returns
(text pieces joined into their part, signatures kept on it) and parsed by the same function.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import httpx2

from agen.runner.providers._files import files_of, refuse
from agen.runner.providers._http import MAX_IN_FLIGHT, Endpoint, HttpProvider, parse_retry_after
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
from agen.runner.providers.prices import gemini_cost

GEMINI_URL = "https://generativelanguage.googleapis.com"
NATIVE = (
    "gemini_content"  # the type of the ModelResponse.thinking block holding a model turn's parts
)
# Google's documented signature for model turns that came from elsewhere (another provider's
# history): Gemini 3 then skips the check instead of refusing the request.
FOREIGN_SIGNATURE = "skip_thought_signature_validator"
FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}
# finish reasons worth another try: the model's own slip, not a verdict on the content
RETRY_FINISH = {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "MALFORMED_RESPONSE"}
BLOCKED = {
    "SAFETY": "Gemini's safety filters blocked it",
    "RECITATION": "it would recite copyrighted material",
    "PROHIBITED_CONTENT": "it is prohibited content",
    "BLOCKLIST": "it contains a blocked term",
    "SPII": "it contains sensitive personal information",
    "IMAGE_SAFETY": "an image broke the safety rules",
    "LANGUAGE": "the language is not supported",
}
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
INLINE = ("image/png", "image/jpeg", "image/webp", "application/pdf")  # no gif on Gemini
MAX_INLINE = 20 * 1024 * 1024  # the API's limit for a request's inline data
# reasoning effort on Gemini 2.5, which takes a thinking budget, not a level
BUDGETS = {"low": 1024, "medium": 8192, "high": 24576}


def _call_args(c: dict[str, Any]) -> dict[str, Any]:
    try:
        args = json.loads((c.get("function") or {}).get("arguments") or "{}")
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}


def _native_parts(m: dict[str, Any]) -> list[dict[str, Any]] | None:
    for block in m.get(THINKING_KEY) or []:
        if isinstance(block, dict) and block.get("type") == NATIVE:
            return [dict(p) for p in block.get("parts") or []]
    return None


def _model_parts(
    m: dict[str, Any], calls: dict[str, tuple[str, str | None]]
) -> list[dict[str, Any]]:
    """A stored assistant turn as a model Content's parts; records each call's (name, API id)."""
    tool_calls = m.get("tool_calls") or []
    native = _native_parts(m)
    if native is not None:  # as the API sent it, signatures and thoughts included
        sent = [p["functionCall"] for p in native if isinstance(p.get("functionCall"), dict)]
        for c, fc in zip(tool_calls, sent, strict=False):
            calls[c["id"]] = (str(fc.get("name") or ""), fc.get("id"))
        return native
    parts: list[dict[str, Any]] = []
    if m.get("content"):
        parts.append({"text": str(m["content"])})
    for c in tool_calls:
        name = str((c.get("function") or {}).get("name") or "")
        part: dict[str, Any] = {"functionCall": {"name": name, "args": _call_args(c)}}
        if not any("functionCall" in p for p in parts):
            part["thoughtSignature"] = FOREIGN_SIGNATURE
        parts.append(part)
        calls[c["id"]] = (name, None)
    return parts


def _file_parts(m: dict[str, Any], model: str) -> list[dict[str, Any]]:
    """A user message's files as parts: images and PDFs as ``inlineData``, text files as text."""
    parts: list[dict[str, Any]] = []
    for f in files_of(m):
        if f.media_type in INLINE:
            parts.append({"inlineData": {"mimeType": f.media_type, "data": f.data}})
        elif f.is_text:
            parts.append({"text": f.framed()})
        else:
            raise refuse(
                "gemini",
                model,
                f,
                f"Gemini takes {', '.join(INLINE)} inline; convert it to one of those",
            )
    return parts


def to_contents(
    chat: list[dict[str, Any]], model: str = ""
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """OpenAI chat messages as (systemInstruction, contents). The leading system message is the
    system instruction; a later one (budget notes) is a user text. Consecutive turns of one role
    are merged: the results of parallel calls go back in one user turn."""
    system: dict[str, Any] | None = None
    out: list[dict[str, Any]] = []
    calls: dict[str, tuple[str, str | None]] = {}
    for i, m in enumerate(chat):
        role = m.get("role")
        if role == "system" and i == 0:
            if m.get("content"):
                system = {"parts": [{"text": str(m["content"])}]}
            continue
        if role == "assistant":
            parts = _model_parts(m, calls)
            api_role = "model"
        elif role == "tool":
            call_id = str(m.get("tool_call_id") or "")
            name, api_id = calls.get(call_id, (str(m.get("name") or ""), None))
            response: dict[str, Any] = {
                "name": name,
                "response": {"output": str(m.get("content") or "(no output)")},
            }
            if api_id:
                response["id"] = api_id
            parts = [{"functionResponse": response}]
            api_role = "user"
        else:  # user, or a late system note
            text = str(m.get("content") or "")
            parts = ([{"text": text}] if text.strip() else []) + _file_parts(m, model)
            api_role = "user"
        if not parts:
            continue
        if out and out[-1]["role"] == api_role:
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": api_role, "parts": parts})
    return system, out


def retry_delay(status: int, headers: httpx2.Headers, text: str) -> float | None:
    """Retry-After, else the ``google.rpc.RetryInfo`` delay a 429 body names ("37s")."""
    after = parse_retry_after(headers.get("retry-after"))
    if after is not None or status != 429:
        return after
    try:
        details = (json.loads(text).get("error") or {}).get("details") or []
    except (ValueError, AttributeError):
        return None
    for d in details:
        if isinstance(d, dict) and str(d.get("@type", "")).endswith("RetryInfo"):
            found = _DELAY.match(str(d.get("retryDelay") or ""))
            if found:
                return float(found.group(1))
    return None


class GeminiProvider(HttpProvider):
    name = "gemini"
    account_400 = ("api_key_invalid", "api key not valid")  # the API says a bad key with a 400

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str = "",
        base_url: str | None = None,
        timeout_s: float = 120.0,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self.base_url = (base_url or GEMINI_URL).rstrip("/")
        # the SDK's base URL has no version; a gateway URL given with one works too
        self.prefix = "" if re.search(r"/v1(beta|alpha)?$", self.base_url) else "/v1beta"
        self.default_model = model
        self.api_key = api_key
        headers = {"content-type": "application/json"}
        if api_key:
            headers["x-goog-api-key"] = api_key
        self.endpoint = Endpoint(
            self.name, self.base_url, headers, timeout_s=timeout_s, max_in_flight=max_in_flight
        )

    def path(self, model: str, stream: bool) -> str:
        name = quote(model.removeprefix("models/"), safe="-._")
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"{self.prefix}/models/{name}:{method}"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The generateContent request for one call (the model goes in the URL)."""
        model = request.model or self.default_model
        system, contents = to_contents(request.messages, model)
        inline = sum(len(f.data) for m in request.messages for f in files_of(m))
        if inline > MAX_INLINE:
            raise ProviderError(
                "other",
                f"gemini: the attached files are {inline} bytes as base64; a request may carry at "
                f"most {MAX_INLINE} inline (20 MB): attach fewer or smaller files",
            )
        body: dict[str, Any] = {"contents": contents}
        if system is not None:
            body["systemInstruction"] = system
        if request.tools:
            body["tools"] = [
                {"functionDeclarations": tool_declarations(request.tools, "parametersJsonSchema")}
            ]
            if request.tool_choice == "none":
                body["toolConfig"] = {"functionCallingConfig": {"mode": "NONE"}}
        config: dict[str, Any] = {}
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.reasoning_effort:
            effort = request.reasoning_effort
            config["thinkingConfig"] = (
                {"thinkingBudget": BUDGETS.get(effort, 8192), "includeThoughts": True}
                if "gemini-2.5" in model
                else {"thinkingLevel": effort.upper(), "includeThoughts": True}
            )
        if config:
            body["generationConfig"] = config
        return body

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        model = request.model or self.default_model
        body = self.body(request)
        if on_delta is None:
            return parse_response(await self.post_json(self.path(model, False), body), model)
        chunks = ChunkAssembler()
        await self.stream(self.path(model, True), body, chunks, on_delta)
        return parse_response(chunks.response(), model)

    def retry_after(self, response: httpx2.Response, text: str) -> float | None:
        # 429 RESOURCE_EXHAUSTED and 503 UNAVAILABLE are retried after the delay
        return retry_delay(response.status_code, response.headers, text)


class ChunkAssembler:
    """Streamed GenerateContentResponse chunks in, the one response they add up to out."""

    def __init__(self) -> None:
        self.top: dict[str, Any] = {}
        self.candidate: dict[str, Any] = {}
        self.parts: list[dict[str, Any]] = []
        self.finished = False  # a finish reason (or a blocked prompt) came: the answer is whole

    def _join(self, part: dict[str, Any]) -> bool:
        """Add a text piece to the part before it when both are text of one kind (answer or
        thought) and that part is not closed by a signature yet; a piece with only a signature
        closes the part before it."""
        if "text" not in part or not self.parts:
            return False
        last = self.parts[-1]
        if "text" not in last or bool(last.get("thought")) != bool(part.get("thought")):
            return False
        if "thoughtSignature" in last:
            return False
        last["text"] += part["text"]
        if "thoughtSignature" in part:
            last["thoughtSignature"] = part["thoughtSignature"]
        return True

    def add(self, chunk: dict[str, Any]) -> list[Delta]:
        """Take one chunk; the pieces of text and thought it carries, to show as they come."""
        out: list[Delta] = []
        for key, value in chunk.items():
            if key != "candidates":
                self.top[key] = value  # usageMetadata, modelVersion, responseId: the last wins
        if (chunk.get("promptFeedback") or {}).get("blockReason"):
            self.finished = True
        for cand in chunk.get("candidates") or []:
            if cand.get("index", 0) != 0:
                continue
            for key, value in cand.items():
                if key != "content":
                    self.candidate[key] = value
            for part in (cand.get("content") or {}).get("parts") or []:
                piece = dict(part)
                text = piece.get("text")
                if isinstance(text, str) and text:
                    out.append(Delta(text, "thinking" if piece.get("thought") else "text"))
                if not self._join(piece):
                    self.parts.append(piece)
            if cand.get("finishReason"):
                self.finished = True
        return out

    def response(self) -> dict[str, Any]:
        data = dict(self.top)
        if self.candidate or self.parts:
            content = {"role": "model", "parts": self.parts} if self.parts else {"role": "model"}
            data["candidates"] = [{**self.candidate, "content": content}]
        return data


def _blocked(model: str, what: str, reason: str, said: str = "") -> ProviderError:
    why = BLOCKED.get(reason, "the API gave no other explanation")
    return ProviderError(
        "other",
        f"{model} {what} ({reason}: {why})" + (f"; it had said: {said[:300]}" if said else ""),
    )


def parse_response(data: dict[str, Any], model_sent: str) -> ModelResponse:
    """A GenerateContentResponse as a ModelResponse: text, function calls, the model turn kept
    whole (signatures and thoughts: it goes back as it came), usage with cached and thinking tokens, and its price."""
    model = str(data.get("modelVersion") or model_sent)
    feedback = data.get("promptFeedback") or {}
    if feedback.get("blockReason"):
        raise _blocked(model, "refused the prompt", str(feedback["blockReason"]))
    candidates = data.get("candidates") or []
    if not candidates:
        raise ProviderError("retryable", f"{model} answered with no candidate")
    cand = candidates[0]
    parts = [p for p in (cand.get("content") or {}).get("parts") or [] if isinstance(p, dict)]
    texts: list[str] = []
    calls: list[ToolCallOut] = []
    for p in parts:
        if isinstance(p.get("text"), str) and not p.get("thought"):
            texts.append(p["text"])
        fc = p.get("functionCall")
        if isinstance(fc, dict):
            args = fc.get("args")
            n = len(calls)
            calls.append(
                ToolCallOut(
                    id=str(fc.get("id") or f"{data.get('responseId') or 'call'}_{n}"),
                    name=str(fc.get("name") or ""),
                    arguments=args if isinstance(args, dict) else {},
                    arguments_error=None
                    if isinstance(args, dict) or args is None
                    else "the arguments must be a JSON object",
                )
            )
    text = "".join(texts)
    finish = str(cand.get("finishReason") or "")
    if finish in RETRY_FINISH:
        raise ProviderError("retryable", f"{model} stopped with finishReason {finish}")
    if finish and finish not in FINISH:
        raise _blocked(model, "stopped answering", finish, text.strip())
    u = data.get("usageMetadata") or {}
    prompt = int(u.get("promptTokenCount") or 0) + int(u.get("toolUsePromptTokenCount") or 0)
    cached = int(u.get("cachedContentTokenCount") or 0)
    out = int(u.get("candidatesTokenCount") or 0) + int(u.get("thoughtsTokenCount") or 0)
    return ModelResponse(
        text=text,
        tool_calls=calls,
        finish_reason="tool_calls" if calls and finish == "STOP" else FINISH.get(finish),
        usage=ModelUsage(
            input_tokens=prompt,  # promptTokenCount counts the cached tokens too
            output_tokens=out,  # thinking is billed as output
            cached_tokens=cached,
            cost_usd=gemini_cost(model, prompt - cached, cached, out),
        ),
        model=model,
        raw=data,
        thinking=[{"type": NATIVE, "parts": parts}] if parts else [],
    )


def stored_parts(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The model turn of a stored answer (its raw GenerateContentResponse), as ModelResponse.thinking
    holds it."""
    candidates = data.get("candidates") if isinstance(data, dict) else None
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        return None
    parts = (candidates[0].get("content") or {}).get("parts")
    return [{"type": NATIVE, "parts": parts}] if isinstance(parts, list) and parts else None
