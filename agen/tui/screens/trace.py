"""Trace: the span waterfall of a task's trace (the same tree `agen trace` prints)."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from agen.api import registry as r
from agen.api.models.observe import GetTraceRequest, GetTraceResponse, ListRunsRequest
from agen.cli.observe_render import trace_tree
from agen.tui.screens.base import AgenScreen


class TraceScreen(AgenScreen):
    WATCHES = ("run.",)

    def __init__(self) -> None:
        super().__init__()
        self.trace: GetTraceResponse | None = None
        """The trace on screen."""

    def body(self) -> ComposeResult:
        with VerticalScroll():
            yield Static("", id="trace")

    def reload(self) -> None:
        self.load(self.agen.target)

    @work(exclusive=True, group="load")
    async def load(self, target: str | None) -> None:
        try:
            await self._load(target)
        finally:
            self.loads += 1

    async def _load(self, target: str | None) -> None:
        view = self.query_one("#trace", Static)
        try:
            if target is None:
                runs = (await self.client.call(r.ListRuns, ListRunsRequest(limit=1, roots=True))).runs
                if not runs:
                    view.update("No traces yet. Run a task (Fleet: n), then press w.")
                    return
                target = runs[0].trace_id
            resp = await self.client.call(r.GetTrace, GetTraceRequest(id=target))
        except Exception as e:
            self.failed(e, f"loading the trace of {target}")
            return
        self.trace = resp
        view.update(trace_tree(resp))
