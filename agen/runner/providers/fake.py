"""The fake provider: a deterministic scripted model, shipped as a product feature.

A script is a list of turns (text and/or tool calls). The position in the script is the
number of assistant turns already stored in this run, so a resumed run continues the
script where it stopped. Without a script it echoes the last user message. Streamed, the
answer's text comes word by word (``chunks``), then the whole turn; to a run nobody watches
(``WatchedSink``), in one delta.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from agen.bundle.harness import Turn
from agen.runner.providers._files import files_of
from agen.runner.providers.base import (
    Delta,
    DeltaSink,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    ToolCallOut,
    watched,
)
from agen.runner.tools.wire_names import mcp_wire_name


def _estimate_tokens(messages: list[dict[str, Any]]) -> int:
    return (
        sum(
            len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) for m in messages
        )
        // 4
        + 1
    )


def last_user_text(messages: list[dict[str, Any]]) -> str:
    """The newest user message's text, and what files it came with (the fake model takes any file
    and says what it got, so a test sees them arrive)."""
    for m in reversed(messages):
        if m.get("role") == "user":
            text = str(m.get("content") or "")
            files = files_of(m)
            if files:
                text += " [attached: " + "; ".join(f.describe() for f in files) + "]"
            return text
    return ""


def wire_name(name: str, offered: list[dict[str, Any]]) -> str:
    """The model-facing name of a tool a script names as the bundle does (``server.tool``) or as the
    model sees it. The plain ``_`` join is not it when ambiguous (``a_b.c`` is not ``a.b_c``, whose
    join is ``a_b_c``): the MCP naming decides (wire_names), else a built-in's own join."""
    names = {str(t.get("function", t).get("name")) for t in offered}
    server, dot, tool = name.partition(".")
    mcp = mcp_wire_name(server, tool) if dot else name
    return next((c for c in (name, mcp, name.replace(".", "_")) if c in names), mcp)


def chunks(text: str) -> list[str]:
    """The pieces a streamed fake answer comes in: each word with the spaces after it."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


class FakeProvider(ModelProvider):
    name = "fake"
    default_model = "fake"

    def __init__(self, script: list[Turn] | None = None, *, delay_s: float = 0.0) -> None:
        self.script = script
        self.delay_s = delay_s
        self.calls = 0

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        response = await self._answer(request)
        if on_delta is not None:
            # word by word for a watcher; in one piece when nobody watches (the same text)
            pieces = chunks(response.text) if watched(on_delta) else [response.text]
            for piece in pieces:
                if piece:
                    await on_delta(Delta(piece))
        return response

    async def _answer(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        model = request.model or self.default_model
        if self.script is None:
            return self._echo(request, model)
        pos = request.run_turn
        if pos >= len(self.script):
            text = f"(the fake script has {len(self.script)} turns; there is no turn {pos + 1}, so this run ends here)"
            return ModelResponse(
                text=text,
                finish_reason="stop",
                model=model,
                usage=ModelUsage(_estimate_tokens(request.messages), len(text) // 4 + 1),
            )
        turn = self.script[pos]
        calls = [
            ToolCallOut(
                id=c.id or f"call_{pos}_{i}",
                name=wire_name(c.name, request.tools),
                arguments=dict(c.arguments),
            )
            for i, c in enumerate(turn.tool_calls or [])
        ]
        text = turn.text or ""
        if request.tool_choice == "none" and calls:
            calls = []
            text = text or f"Report: {last_user_text(request.messages)[:500]}"
        if turn.usage is not None:
            usage = ModelUsage(
                turn.usage.input_tokens,
                turn.usage.output_tokens,
                0,
                turn.usage.cost_usd if turn.usage.cost_usd else None,
            )
        else:
            usage = ModelUsage(_estimate_tokens(request.messages), len(text) // 4 + 1)
        finish = turn.finish_reason or ("tool_calls" if calls else "stop")
        return ModelResponse(
            text=text, tool_calls=calls, finish_reason=finish, usage=usage, model=model
        )

    def _echo(self, request: ModelRequest, model: str) -> ModelResponse:
        said = last_user_text(request.messages)
        text = f"You said: {said}" if said else "Hello from the offline fake model."
        return ModelResponse(
            text=text,
            finish_reason="stop",
            model=model,
            usage=ModelUsage(_estimate_tokens(request.messages), len(text) // 4 + 1),
        )
