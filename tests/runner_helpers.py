"""Helpers for runner tests: bundles from dicts, a store, a runner, and small host tools."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agen.bundle import Bundle, load_bundle_files
from agen.runner.loop import Runner
from agen.runner.providers.base import DeltaSink, ModelProvider, ModelRequest, ModelResponse
from agen.runner.tools.base import Tool, ToolContext, ToolError, ToolResult, Toolset
from agen.runner.turn import TurnPolicy
from agen.store import SQLiteStore
from tests.unit.bundle_helpers import bundle_files


def make(
    harness: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    files: dict[str, Any] | None = None,
) -> Bundle:
    h = {"provider": "fake", **(harness or {})}
    c = {"kind": "pool", **(config or {})}
    return load_bundle_files(bundle_files(files, harness=h, config=c))


def script(*turns: dict[str, Any]) -> dict[str, Any]:
    return {"provider": "fake", "fake": {"script": list(turns)}}


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"toolCalls": [{"name": tool, "arguments": arguments}]}


async def open_store(tmp_path: Path) -> SQLiteStore:
    return await SQLiteStore.open(tmp_path / "agen.db")


class FnTool(Tool):
    """A host tool backed by a coroutine function, with configurable flags."""

    def __init__(
        self,
        name: str,
        fn: Any,
        *,
        side_effect: bool = False,
        idempotent: bool = False,
        schema: dict[str, Any] | None = None,
        untrusted_output: bool = False,
    ) -> None:
        self.name = name
        self.fn = fn
        self.side_effect = side_effect
        self.idempotent = idempotent
        self.untrusted_output = untrusted_output
        self.input_schema = schema or {"type": "object", "properties": {}}
        self.calls: list[dict[str, Any]] = []

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.calls.append(args)
        out = await self.fn(args)
        return out if isinstance(out, ToolResult) else ToolResult(str(out))


class Tools(Toolset):
    def __init__(self, *tools: Tool) -> None:
        self.tools = list(tools)

    async def start(self) -> list[Tool]:
        return self.tools


async def echo(args: dict[str, Any]) -> str:
    return f"echo {args}"


async def fail(args: dict[str, Any]) -> str:
    raise ToolError("boom: the thing is broken")


async def slow(args: dict[str, Any]) -> str:
    await asyncio.sleep(float(args.get("s", 0.05)))
    return f"slept {args.get('tag', '')}"


class Capturing(ModelProvider):
    """Wraps a provider and keeps every request it saw."""

    def __init__(self, inner: ModelProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.default_model = inner.default_model
        self.requests: list[ModelRequest] = []

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        self.requests.append(request)
        return await self.inner.complete(request, on_delta)


def runner(
    store: SQLiteStore, bundle: Bundle, *tools: Tool, owner: str = "test", **kw: Any
) -> Runner:
    kw.setdefault(
        "turn_policy", TurnPolicy(max_retries=bundle.harness.max_retries, backoff_base_s=0.001)
    )
    return Runner(store, bundle, owner=owner, toolsets=[Tools(*tools)] if tools else None, **kw)


async def capturing_runner(
    store: SQLiteStore, bundle: Bundle, *tools: Tool, **kw: Any
) -> tuple[Runner, Capturing]:
    from agen.runner.providers import build_accounts

    accounts = await build_accounts(bundle)
    cap = Capturing(accounts[0].provider)
    accounts[0].provider = cap
    return runner(store, bundle, *tools, accounts=accounts, **kw), cap
