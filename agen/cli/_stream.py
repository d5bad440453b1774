"""``agen run`` printing the answer as the model streams it.

The run's live events (agen.domain.live: ``run.delta``, ``model.started``/``finished``,
``tool.started``) come from the Hub (in process, or its SSE door over HTTP). Each turn's text goes
to stdout as it arrives; a tool call is one line on stderr in a terminal. When the task ends, the
outcome is printed as before, minus what already streamed: the rest of the last turn if the stream
was behind, nothing if it was all shown, the whole outcome if it is other text (a ``finish``
summary). A turn joined mid-way (deltas before the subscription) is not printed in part, and a turn
asked again after its stream broke off starts on a new line.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from agen.client import Client
    from agen.wire.tasks import Task


class StreamPrinter:
    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.turn: int | None = None  # the turn being shown (its model.started was seen)
        self.shown = ""  # the text of that turn printed so far
        self.open_line = False  # stdout's last line is not ended yet

    def _newline(self) -> None:
        if self.open_line:
            self.out.write("\n")
            self.out.flush()
            self.open_line = False

    def on(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        data: dict[str, Any] = event.get("data") or {}
        turn = data.get("turn")
        if kind == "model.started":
            if self.shown and turn == self.turn:
                self._newline()
                self.err.write("(the answer broke off; the model is asked again)\n")
            self.turn, self.shown = turn, ""
        elif kind == "run.delta" and data.get("kind") == "text" and turn == self.turn:
            text = str(data.get("text") or "")
            self.out.write(text)
            self.out.flush()
            self.shown += text
            self.open_line = not text.endswith("\n")
        elif kind == "model.finished":
            self._newline()
        elif kind == "tool.started" and self.err.isatty():
            self._newline()
            self.err.write(f"· {data.get('tool')}\n")
            self.err.flush()

    def rest(self, outcome: str) -> str | None:
        """What of the outcome's text is still to print once the task ended (None: all shown); a
        rest that continues the last streamed line is printed on it."""
        if self.shown and outcome.startswith(self.shown):
            left = outcome[len(self.shown) :]
            if left.strip():
                return left
            self._newline()
            return None
        self._newline()
        return outcome


async def wait_streaming(
    client: Client, task_id: str, timeout_ms: int, namespace: str, printer: StreamPrinter
) -> Task:
    """Wait for the task while printing its live events."""
    from agen.cli.tasks import wait_for_task

    async with client.live(namespace, task_id) as events:

        async def follow() -> None:
            async for event in events:
                printer.on(event)

        follower = asyncio.create_task(follow())
        try:
            return await wait_for_task(client, task_id, timeout_ms, namespace)
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await follower


def streams_by_default(json_out: bool, no_wait: bool) -> bool:
    """Without --stream/--no-stream: stream to a terminal, never for --json or --no-wait."""
    return not json_out and not no_wait and sys.stdout.isatty()
