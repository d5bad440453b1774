"""Memory blocks and live context (seed 000 §7, 3.10 and 1.8).

Blocks are durable, namespace-scoped named text with a version bumped on every update,
attached in config.json memory with mode read / append / write and rendered into the
system prompt fresh before every model call, so parallel conversations see each other's
writes at their next turn. Non-read attachments get a ``memory_update`` tool with an
optional expectedVersion compare-and-set. ``url`` entries are fetched before every call
and left out of that turn when the fetch fails.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from agen.bundle.config import MemoryBlock, MemoryUrl
from agen.domain.memory import (
    DEFAULT_LIMIT,
    OPERATIONS,
    UNKNOWN,
    Author,
    MemoryBlockRow,
    check_version,
    get_block,
    rollback_block,
    set_block,
    update_block,
)
from agen.errors import ConflictError, InvalidError
from agen.runner.redact import Redactor
from agen.runner.tools.base import Tool, ToolContext, ToolError, ToolResult
from agen.store.base import Store
from agen.store.records import columns

__all__ = [  # the block rules are agen.domain.memory's; re-exported for the engine's callers
    "DEFAULT_LIMIT",
    "OPERATIONS",
    "UNKNOWN",
    "Author",
    "MemoryContext",
    "MemoryUpdateTool",
    "check_version",
    "get_block",
    "rollback_block",
    "set_block",
    "update_block",
]

log = logging.getLogger("agen.memory")
URL_MAX_CHARS = 4000
URL_TIMEOUT_S = 5.0


@dataclass
class _Live:
    url: str
    max_chars: int
    timeout_s: float


class MemoryContext:
    """A bundle's memory attachments for one namespace: the prompt section and the update tool."""

    def __init__(
        self,
        store: Store,
        namespace: str,
        attachments: list[MemoryBlock | MemoryUrl],
        redactor: Redactor | None = None,
    ) -> None:
        self.store = store
        self.redactor = redactor or Redactor()  # values are scrubbed before they are stored
        self.namespace = namespace
        self.blocks = [a for a in attachments if isinstance(a, MemoryBlock)]
        self.live = [
            _Live(a.url, a.max_chars or URL_MAX_CHARS, a.timeout_seconds or URL_TIMEOUT_S)
            for a in attachments
            if isinstance(a, MemoryUrl)
        ]

    def tools(self) -> list[Tool]:
        writable: dict[str, str] = {b.block: b.mode for b in self.blocks if b.mode != "read"}
        return [MemoryUpdateTool(self, writable)] if writable else []

    async def section(self) -> str:
        """The system prompt section, read fresh (call before every model call)."""
        parts: list[str] = []
        if self.blocks:
            labels = [b.block for b in self.blocks]
            marks = ",".join("?" * len(labels))
            rows = await self.store.rows(
                MemoryBlockRow,
                f"SELECT {columns(MemoryBlockRow)} FROM memory_blocks"
                f" WHERE namespace = ? AND label IN ({marks})",
                (self.namespace, *labels),
            )
            by_label = {r.label: r for r in rows}
            for b in self.blocks:
                r = by_label.get(b.block)
                value, version = (r.value, r.version) if r else ("", 0)
                limit = r.limit_chars if r else DEFAULT_LIMIT
                head = f"## Memory: {b.block} ({b.mode}, version {version}, {len(value)}/{limit} characters)"
                desc = f"\n{r.description}" if r and r.description else ""
                parts.append(f"{head}{desc}\n{value or '(empty)'}")
        for live in self.live:
            text = await fetch_live(live.url, live.max_chars, live.timeout_s)
            if text is not None:
                parts.append(f"## Live: {live.url}\n{text}")
        return "\n\n".join(parts)


async def fetch_live(url: str, max_chars: int, timeout_s: float) -> str | None:
    """A plain GET; None on any failure (unreachable, non-2xx, timeout)."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=timeout_s, follow_redirects=True) as client:
            resp = await client.get(url)
        if not resp.is_success:
            log.info("live context %s answered HTTP %s; left out this turn", url, resp.status_code)
            return None
        text = resp.text
    except (httpx.HTTPError, OSError) as e:
        log.info("live context %s failed (%s); left out this turn", url, e)
        return None
    return (
        text if len(text) <= max_chars else text[:max_chars] + f"\n[cut at {max_chars} characters]"
    )


class MemoryUpdateTool(Tool):
    """Lets the agent change the memory blocks attached with mode append or write."""

    name = "memory_update"

    def __init__(self, memory: MemoryContext, modes: dict[str, str]) -> None:
        self.memory = memory
        self.modes = modes
        self.side_effect = True
        self.description = (
            "Update a memory block shown in your system prompt. operation: replace (write blocks), append, "
            "or str_replace (old -> value). Pass expectedVersion (the version shown) to avoid overwriting "
            f"someone else's update. Blocks you can change: {', '.join(f'{k} ({v})' for k, v in modes.items())}."
        )
        self.input_schema = {
            "type": "object",
            "properties": {
                "block": {"type": "string", "enum": sorted(modes)},
                "operation": {"type": "string", "enum": list(OPERATIONS)},
                "value": {"type": "string"},
                "old": {"type": "string"},
                "expectedVersion": {"type": "integer"},
            },
            "required": ["block", "operation", "value"],
        }

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        label, op = str(args.get("block", "")), str(args.get("operation", ""))
        mode = self.modes.get(label)
        if mode is None:
            raise ToolError(
                f"memory block {label!r} is not attached for writing; you can change: "
                f"{', '.join(sorted(self.modes))}"
            )
        if mode == "append" and op != "append":
            raise ToolError(f"memory block {label} is attached append-only; use operation append")
        expected = args.get("expectedVersion")
        red = self.memory.redactor
        value = red.redact(str(args.get("value", "")))
        old = red.redact(str(args["old"])) if args.get("old") is not None else None
        try:
            row = await self.memory.store.write(
                lambda tx: update_block(
                    tx,
                    ctx.namespace or self.memory.namespace,
                    label,
                    op,
                    value,
                    old=old,
                    expected_version=int(expected) if expected is not None else None,
                    author=Author.run(ctx.run_id),
                )
            )
        except (ConflictError, InvalidError) as e:
            raise ToolError(e.message) from None
        return ToolResult(
            f"memory block {label} is now at version {row.version} "
            f"({len(row.value)}/{row.limit_chars} characters)"
        )
