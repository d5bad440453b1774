"""The MCP tool catalogue's saving: tool-schema tokens a model call carries on a bundle with 5
real stdio MCP servers (agen mcp workspace, agen mcp sql, and a tracker, a chat and a wiki server
from many_tools_server.py), with every schema sent (builtinTools.toolCatalogue null) against the
catalogue (the default threshold, 40).

Tokens are estimated as characters / 4 of the request's JSON tool list (tiktoken is not a
dependency; the same estimate agen's context trimming uses). Both runs do the same task through the
fake model: call tracker_create_issue once, then answer; the catalogue run first lists the tracker's
tools and activates that one, so it makes two model calls more.

    PYTHONPATH=. python -m scripts.bench.catalogue_bench
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
KINDS = ("tracker", "chat", "wiki")


def _mcp(root: Path) -> dict[str, Any]:
    servers: dict[str, Any] = {
        "workspace": {"command": "agen", "args": ["mcp", "workspace", "--root", str(root / "ws")]},
        "sql": {
            "command": "agen",
            "args": ["mcp", "sql"],
            "env": {"AGEN_SQL_DSN": f"sqlite:///{root / 'data.db'}"},
        },
    }
    for kind in KINDS:
        servers[kind] = {
            "command": sys.executable,
            "args": [str(HERE / "many_tools_server.py"), kind],
        }
    return {"mcpServers": servers}


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"toolCalls": [{"name": tool, "arguments": arguments}]}


ISSUE = {"owner": "acme", "repo": "web", "title": "Login fails on Safari"}


async def _requests(root: Path, threshold: int | None, turns: list[dict[str, Any]]) -> list[Any]:
    from agen.bundle import load_bundle_files
    from agen.runner.loop import Runner
    from agen.runner.providers import build_accounts
    from agen.runner.providers.base import DeltaSink, ModelProvider, ModelRequest, ModelResponse
    from agen.runner.tooling import build_tooling
    from agen.runner.types import RunRequest
    from agen.store import SQLiteStore

    class Capturing(ModelProvider):
        def __init__(self, inner: ModelProvider) -> None:
            self.inner, self.name, self.default_model = inner, inner.name, inner.default_model
            self.requests: list[ModelRequest] = []

        async def complete(
            self, request: ModelRequest, on_delta: DeltaSink | None = None
        ) -> ModelResponse:
            self.requests.append(request)
            return await self.inner.complete(request, on_delta)

    files = {
        "plugin.json": {"name": "many-tools"},
        "mcp.json": _mcp(root),
        "x-agen/agent.md": "---\nname: many-tools\ndescription: files issues\n---\nFile issues.\n",
        "x-agen/harness.json": {
            "provider": "fake",
            "fake": {"script": turns},
            # the sandboxed servers see this bench's folder (the sql server's database, the workspace)
            "sandbox": {"filesystem": {"write": [str(root)]}},
        },
        "x-agen/config.json": {
            "kind": "pool",
            "permissions": {"default": "allow"},
            "builtinTools": {"toolCatalogue": threshold},
        },
    }
    bundle = load_bundle_files(
        {
            k: json.dumps(v).encode() if not isinstance(v, str) else v.encode()
            for k, v in files.items()
        }
    )
    store = await SQLiteStore.open(root / f"agen-{threshold}.db")
    tooling = build_tooling(bundle, store)
    accounts = await build_accounts(bundle)
    cap = Capturing(accounts[0].provider)
    accounts[0].provider = cap
    runner = Runner(
        store,
        bundle,
        owner="bench",
        toolsets=tooling.toolsets,
        policy=tooling.policy,
        redactor=tooling.redactor,
        accounts=accounts,
    )
    try:
        res = await runner.run(RunRequest(input="file the Safari login bug", task_id="t-1"))
        if res.status != "succeeded":
            raise SystemExit(f"the benchmark run failed: {res.outcome}")
    finally:
        await runner.close()
        await store.close()
    return cap.requests


def _tokens(tools: list[dict[str, Any]]) -> int:
    return len(json.dumps(tools, ensure_ascii=False)) // 4


def _prompt(request: Any) -> int:
    """The whole request's input, tools and messages (the catalogue's listings are messages)."""
    return _tokens(request.tools) + len(json.dumps(request.messages, ensure_ascii=False)) // 4


def run() -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            (root / "ws").mkdir()
            sqlite3.connect(root / "data.db").close()  # agen mcp sql serves an existing database
            full = await _requests(
                root, None, [_call("tracker_create_issue", **ISSUE), {"text": "filed"}]
            )
            lazy = await _requests(
                root,
                40,
                [
                    _call("list_mcp_server_tools", server="tracker"),
                    _call("activate_tool", name="tracker_create_issue"),
                    _call("tracker_create_issue", **ISSUE),
                    {"text": "filed"},
                ],
            )
        mcp_tools = len(
            [
                t
                for t in full[0].tools
                if t["function"]["name"].split("_")[0] in ("workspace", "sql", *KINDS)
            ]
        )
        return {
            "name": "catalogue",
            "servers": 5,
            "tools_sent_full": len(full[0].tools),
            "mcp_tools": mcp_tools,
            "tools_sent_catalogue": len(lazy[0].tools),
            "tokens_full_per_call": _tokens(full[0].tools),
            "tokens_catalogue_per_call": _tokens(lazy[0].tools),
            "tokens_catalogue_after_activation": _tokens(lazy[-1].tools),
            "task_calls_full": len(full),
            "task_calls_catalogue": len(lazy),
            "task_tokens_full": sum(_tokens(r.tools) for r in full),
            "task_tokens_catalogue": sum(_tokens(r.tools) for r in lazy),
            "task_prompt_tokens_full": sum(_prompt(r) for r in full),
            "task_prompt_tokens_catalogue": sum(_prompt(r) for r in lazy),
            "tokenizer": "characters / 4 of the JSON tool list",
        }

    return asyncio.run(go())


def rows(c: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(area, figure, value, baseline (same run), ratio) rows for docs/performance.md."""
    if "tokens_full_per_call" not in c:
        return []
    full, lazy = c["tokens_full_per_call"], c["tokens_catalogue_per_call"]
    return [
        (
            "Tool catalogue",
            f"tool-schema tokens per model call, {c['servers']} stdio MCP servers / {c['mcp_tools']} "
            f"MCP tools (chars/4), catalogue on (threshold 40)",
            f"{lazy:,} tokens ({c['tools_sent_catalogue']} tools)",
            f"every schema {full:,} tokens ({c['tools_sent_full']} tools)",
            f"{lazy / full:.2f}×",
        ),
        (
            "Tool catalogue",
            "same, after activating one tool",
            f"{c['tokens_catalogue_after_activation']:,} tokens",
            f"every schema {full:,} tokens",
            f"{c['tokens_catalogue_after_activation'] / full:.2f}×",
        ),
        (
            "Tool catalogue",
            "tool-schema tokens of a whole task that calls one MCP tool "
            f"({c['task_calls_catalogue']} model calls with the catalogue, {c['task_calls_full']} without)",
            f"{c['task_tokens_catalogue']:,} tokens",
            f"every schema {c['task_tokens_full']:,} tokens",
            f"{c['task_tokens_catalogue'] / c['task_tokens_full']:.2f}×",
        ),
        (
            "Tool catalogue",
            "same task, whole prompts (tools + messages, the listing included)",
            f"{c['task_prompt_tokens_catalogue']:,} tokens",
            f"every schema {c['task_prompt_tokens_full']:,} tokens",
            f"{c['task_prompt_tokens_catalogue'] / c['task_prompt_tokens_full']:.2f}×",
        ),
    ]


if __name__ == "__main__":
    result = run()
    print(json.dumps(result, indent=2))
    print("| Area | Figure | Value | Baseline (same run) | Ratio |")
    print("|---|---|---|---|---|")
    for row in rows(result):
        print("| " + " | ".join(row) + " |")
