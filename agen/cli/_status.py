"""``agen run``'s live status line: what the task is doing while the command waits for it.

In a terminal, one line on stderr is redrawn about once a second from QueryTask (state, what the run
does now and for how long, turns, tokens, cost) and erased when the wait ends, so stdout keeps only
the outcome and a pipe or a log file never sees it.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from agen.client import Client
    from agen.wire.observe import QueryTaskResponse

CLEAR = "\r\x1b[2K"  # back to the line's start, erase it
INTERVAL_S = 1.0


def _seconds(ms: int) -> str:
    s = max(0, ms // 1000)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def status_text(q: QueryTaskResponse, now_ms: int) -> str:
    """``running · tool workspace.run 24s · 3 turns · 1.2k tokens · $0.0123``."""
    task = q.task
    parts = [task.state]
    if task.pending_approvals:
        parts.append(f"waiting for approval {task.pending_approvals[0]}")
    elif task.wait_reason:
        parts.append(f"waiting: {task.wait_reason}")
    now = q.now
    if now is not None:
        doing = now.doing if not now.detail else f"{now.doing} {now.detail}"
        parts.append(f"{doing} {_seconds(now_ms - now.since_ms)}")
    run = q.run
    if run is not None:
        parts.append(f"{run.turns} turn{'s' if run.turns != 1 else ''}")
        parts.append(f"{_tokens(run.usage.input_tokens + run.usage.output_tokens)} tokens")
        parts.append(f"${run.usage.cost_usd:.4f}")
    return " · ".join(parts)


class StatusLine:
    """One redrawn line on a terminal stream; ``clear()`` leaves the stream as it found it."""

    def __init__(self, out: TextIO, hold: Callable[[], bool] | None = None) -> None:
        self.out = out
        self.shown = False
        self.hold = hold  # True while the answer streams on the same terminal: no redraw

    def show(self, text: str) -> None:
        if self.hold is not None and self.hold():
            return
        width = shutil.get_terminal_size((80, 24)).columns
        if len(text) >= width:
            text = text[: max(0, width - 2)] + "…"
        self.out.write(CLEAR + text)
        self.out.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.out.write(CLEAR)
            self.out.flush()
            self.shown = False

    async def follow(self, client: Client, task_id: str, namespace: str | None) -> None:
        """Redraw from QueryTask until cancelled; a failed read keeps the last line (the wait reports)."""
        from agen.api import registry as r
        from agen.wire.observe import QueryTaskRequest

        req = QueryTaskRequest(id=task_id, namespace=namespace)
        while True:
            try:
                q = await client.call(r.QueryTask, req)
            except Exception:  # the status line is a courtesy: the wait itself reports real errors
                q = None
            if q is not None:
                self.show(status_text(q, int(time.time() * 1000)))
            await asyncio.sleep(INTERVAL_S)


async def with_status_line(
    client: Client, task_id: str, namespace: str | None, wait: Any, out: TextIO | None = None
) -> Any:
    """Await ``wait`` (the task's wait) while a status line follows the task on ``out`` (stderr)."""
    line = StatusLine(out or sys.stderr)
    watcher = asyncio.create_task(line.follow(client, task_id, namespace))
    try:
        return await wait
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        line.clear()
