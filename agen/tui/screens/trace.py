"""Trace: the span waterfall of a task's trace (the same tree `agen trace` prints), under the tree of tasks
it belongs to when other agents' tasks are part of it (the cross-agent tree, `agen tree`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from agen.api import registry as r
from agen.errors import NotFoundError
from agen.render.observe import trace_tree
from agen.tui.screens.base import AgenScreen
from agen.tui.widgets.task_tree import TaskTree
from agen.wire.observe import GetTraceRequest, GetTraceResponse, ListRunsRequest
from agen.wire.tasks import GetTaskTreeRequest

if TYPE_CHECKING:
    from agen.wire.signals import Event


class TraceScreen(AgenScreen):
    WATCHES = ("run.",)

    def __init__(self) -> None:
        super().__init__()
        self.trace: GetTraceResponse | None = None
        """The trace on screen."""
        self.shown_target: str | None = None

    def body(self) -> ComposeResult:
        yield TaskTree(id="trace-tasks")
        with VerticalScroll():
            yield Static("", id="trace")

    def on_mount(self) -> None:
        self.query_one("#trace-tasks").display = False

    def outdated(self) -> bool:
        return super().outdated() or self.agen.target != self.shown_target

    def changed(self, events: list[Event]) -> None:
        """Only events of the runs in this trace (or any run, while showing the latest trace)."""
        runs = {s.run_id for s in self.trace.spans} if self.trace is not None else set()
        target = self.agen.target
        if target is None or any(e.run_id in runs or e.task_id == target for e in events):
            self.reload()

    async def load(self) -> None:
        target = shown = self.agen.target
        view = self.query_one("#trace", Static)
        await self._show_tasks(target)  # before the trace: a task that has not run yet has none
        try:
            if target is None:
                runs = (
                    await self.client.call(r.ListRuns, ListRunsRequest(limit=1, roots=True))
                ).runs
                if not runs:
                    view.update("No traces yet. Run a task (Fleet: n), then press w.")
                    return
                target = runs[0].trace_id
            resp = await self.client.call(r.GetTrace, GetTraceRequest(id=target))
        except Exception as e:
            self.failed(e, f"loading the trace of {target}")
            return
        self.shown_target = shown
        if resp != self.trace:  # the same spans are not drawn again
            self.trace = resp
            view.update(trace_tree(resp))

    async def _show_tasks(self, target: str | None) -> None:
        """The tree of tasks (across agents) the target task belongs to; hidden for a lone task or a trace id."""
        box = self.query_one("#trace-tasks", TaskTree)
        tree = None
        if target is not None:
            try:
                tree = await self.client.call(r.GetTaskTree, GetTaskTreeRequest(id=target))
            except NotFoundError:  # a trace id, not a task
                tree = None
            except Exception as e:
                self.failed(e, f"loading the task tree of {target}")
        box.display = tree is not None and len(tree.tasks) > 1
        if tree is not None and box.display:
            box.show_tree(tree, selected=target)
