"""``agen run`` printing the answer as the model streams it.

The run's live events (agen.domain.live: ``run.delta``, ``model.started``/``finished``,
``tool.started``) come from the Hub (in process, or its SSE door over HTTP). Each turn's text goes
to stdout as it arrives; in a terminal, the status line (agen/cli/_status.py) shows between
turns (tool calls, waits) and steps aside while text streams. When the task ends, the
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
    from agen.cli._status import StatusLine
    from agen.client import Client, LiveEvents
    from agen.wire.tasks import Task


class StreamPrinter:
    def __init__(self, out: TextIO, err: TextIO, status: StatusLine | None = None) -> None:
        self.out, self.err = out, err
        self.status = status  # cleared before text is written, idle while a line is open
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
            if self.status is not None:
                self.status.clear()
            self.out.write(text)
            self.out.flush()
            self.shown += text
            self.open_line = not text.endswith("\n")
        elif kind == "model.finished":
            self._newline()

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


class Follow:
    """The live events ``agen run`` prints, subscribed before the task is submitted (by its
    deployment: its first words can come before SubmitTask's answer does)."""

    def __init__(self) -> None:
        self.stack = contextlib.AsyncExitStack()
        self.events: LiveEvents | None = None

    async def open(
        self,
        client: Client,
        namespace: str,
        *,
        deployment: str | None = None,
        task: str | None = None,
    ) -> None:
        self.events = await self.stack.enter_async_context(
            client.live(namespace, task, deployment=deployment)
        )

    async def aclose(self) -> None:
        await self.stack.aclose()


async def wait_streaming(
    client: Client,
    task_id: str,
    timeout_ms: int,
    namespace: str,
    printer: StreamPrinter,
    follow: Follow,
) -> Task:
    """Wait for the task while printing its live events."""
    from agen.cli.tasks import wait_for_task

    try:
        if follow.events is None:
            await follow.open(client, namespace, task=task_id)
        events = follow.events
        assert events is not None

        async def show() -> None:
            async for event in events:
                if event.get("task_id") == task_id:
                    printer.on(event)

        tasks = [asyncio.create_task(show())]
        if printer.status is not None:
            tasks.append(asyncio.create_task(printer.status.follow(client, task_id, namespace)))
        try:
            return await wait_for_task(client, task_id, timeout_ms, namespace)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if printer.status is not None:
                printer.status.clear()
    finally:
        await follow.aclose()


def preload() -> None:
    """Load what following a run over HTTP needs (httpx2, its SSE client) before the task is
    submitted: its first words can be out within milliseconds of the submission."""
    import httpx2  # noqa: F401


def streams_by_default(json_out: bool, no_wait: bool) -> bool:
    """Without --stream/--no-stream: stream to a terminal, never for --json or --no-wait."""
    return not json_out and not no_wait and sys.stdout.isatty()
