"""Tasks: filter by state, deployment and label; detail with outcome, progress, wait_reason, lineage;
cancel, pause and resume; open a task's transcript or trace; T shows the selected task's whole tree."""

from __future__ import annotations

import json
from typing import ClassVar

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, Static

from agen.api import registry as r
from agen.tui import fmt
from agen.tui.filter import parse_filter
from agen.tui.rows import Cells, KeyedRows
from agen.tui.screens.base import AgenScreen
from agen.tui.widgets.confirm_dialog import ConfirmDialog
from agen.tui.widgets.filter_box import FilterBox
from agen.tui.widgets.table import FastTable
from agen.tui.widgets.task_tree import TaskTree
from agen.wire.observe import QueryTaskRequest, QueryTaskResponse
from agen.wire.tasks import (
    CancelTaskRequest,
    GetTaskTreeRequest,
    ListTasksRequest,
    PauseTaskRequest,
    ResumeTaskRequest,
    Task,
)

LIMIT = 200
STATES = ("queued", "leased", "running", "waiting", "succeeded", "failed", "cancelled", "expired")


TASK_KEYS = {"state": "state", "s": "state", "dep": "dep", "deployment": "dep", "d": "dep"}


class TasksScreen(AgenScreen):
    AUTO_FOCUS = "#tasks"
    WATCHES = ("task.", "run.", "approval.")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_filter", "Filter"),
        Binding("c", "cancel_task", "Cancel"),
        Binding("p", "pause_task", "Pause"),
        Binding("u", "resume_task", "Resume"),
        Binding("R", "show('transcript')", "Transcript"),  # one footer entry with r
        Binding("W", "show('trace')", "Trace"),
        Binding("T", "toggle_tree", "Tree"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.tasks: list[Task] = []
        self.detail_shown = ""
        self.queried: QueryTaskResponse | None = None
        """The detail pane's task as last fetched: the clock re-renders its "now: … for 18s" from it."""
        self.filter_text = ""
        """What the filter box holds; set before the screen is composed (Enter on a Fleet row opens
        Tasks filtered to a deployment), the box starts with it."""

    def body(self) -> ComposeResult:
        yield FilterBox(
            self.filter_text,
            placeholder="filter: state:running dep:hello team=docs or any text   (enter applies)",
            id="task-filter",
            leave_to="#tasks",
        )
        yield Static("", id="task-filter-note", classes="filter-note")
        yield Static(
            "No tasks match. Run one from Fleet (n) or with `agen run <deployment> <input>`.",
            id="tasks-empty",
            classes="empty",
        )
        yield FastTable(id="tasks", cursor_type="row", zebra_stripes=True)
        yield Static("", id="task-detail", classes="detail")
        yield TaskTree(id="task-tree")

    def on_mount(self) -> None:
        self.rows = KeyedRows(
            self.query_one("#tasks", FastTable),
            ("ID", "DEPLOYMENT", "STATE", ("WAIT", 100), ("PRIORITY", 120), "AGE", "INPUT"),
        )
        self.query_one("#tasks-empty").display = False
        self.query_one("#task-tree").display = False
        self.query_one("#task-filter-note").display = False

    def set_filter(self, text: str) -> None:
        """Filter by ``text``, now or, before the screen is composed, from its first load on."""
        self.filter_text = text
        for box in self.query("#task-filter").results(FilterBox):  # none yet: composed with it
            box.set_applied(text)
            self.reload()

    def action_focus_filter(self) -> None:
        self.query_one("#task-filter", Input).focus()

    @on(Input.Submitted, "#task-filter")
    def _filter(self) -> None:
        self.query_one("#tasks", FastTable).focus()
        self.reload()

    async def load(self) -> None:
        f = parse_filter(self.query_one("#task-filter", Input).value, TASK_KEYS, STATES)
        note = self.query_one("#task-filter-note", Static)
        if f.problems:  # a typo filters nothing: say so and keep what is shown
            note.update(f.describe(0, 0))
            note.set_class(True, "error")
            note.display = True
            return
        every = self.agen.namespace is None
        try:
            found: list[Task] = []
            for ns in await self.agen.namespaces():
                resp = await self.client.call(
                    r.ListTasks,
                    ListTasksRequest(
                        namespace=ns,
                        deployment=f.fields.get("dep"),
                        state=f.fields.get("state"),
                        labels=f.labels,
                        limit=LIMIT,
                    ),
                )
                found.extend(resp.tasks)
        except Exception as e:
            self.failed(e, "loading tasks")
            return
        if every:  # newest first across namespaces, as each namespace's list is
            found = sorted(found, key=lambda t: t.created_ms, reverse=True)[:LIMIT]
        rows = [(t.id, row_cells(t, namespace=every)) for t in found]
        shown = [(key, cells) for key, cells in rows if f.matches(self.rows.visible(cells))]
        keep = {key for key, _ in shown}
        tasks = [t for t in found if t.id in keep]
        said = f.describe(len(shown), len(rows))
        note.update(said)
        note.set_class(False, "error")
        note.display = bool(said)
        self.tasks = tasks
        self.rows.apply(shown)
        self.query_one("#tasks-empty").display = not tasks
        key = self.rows.cursor_key()
        if key is not None:
            self.show_detail(key)
        else:
            self.detail("")
        if self.query_one("#task-tree").display and key is not None:
            self.show_tree(key)

    def detail(self, text: str) -> None:
        if text != self.detail_shown:  # an unchanged detail is not laid out again
            self.detail_shown = text
            self.query_one("#task-detail", Static).update(text)

    def selected(self) -> Task | None:
        table = self.query_one("#tasks", FastTable)
        if not self.tasks or not 0 <= table.cursor_row < len(self.tasks):
            self.notify("No task selected", severity="warning")
            return None
        return self.tasks[table.cursor_row]

    @on(FastTable.RowHighlighted, "#tasks")
    def _highlighted(self, event: FastTable.RowHighlighted) -> None:
        if event.row_key.value:
            self.agen.target = event.row_key.value
            self.show_detail(event.row_key.value)
            if self.query_one("#task-tree").display:
                self.show_tree(event.row_key.value)

    def action_toggle_tree(self) -> None:
        """Show (or hide) the whole tree of the selected task under the table."""
        tree = self.query_one("#task-tree", TaskTree)
        task = None if tree.display else self.selected()
        tree.display = task is not None
        if task is not None:
            self.show_tree(task.id)

    @work(exclusive=True, group="tree")
    async def show_tree(self, task_id: str) -> None:
        try:
            resp = await self.client.call(r.GetTaskTree, GetTaskTreeRequest(id=task_id))
        except Exception as e:
            self.failed(e, f"loading the tree of task {task_id}")
            return
        self.query_one("#task-tree", TaskTree).show_tree(resp, selected=task_id)

    @on(TaskTree.NodeHighlighted, "#task-tree")
    def _tree_node(self, event: TaskTree.NodeHighlighted[str]) -> None:
        if event.node.data:  # R and W open this task's transcript and trace
            self.agen.target = event.node.data

    @work(exclusive=True, group="detail")
    async def show_detail(self, task_id: str) -> None:
        try:
            q = await self.client.call(r.QueryTask, QueryTaskRequest(id=task_id))
        except Exception as e:
            self.failed(e, f"loading task {task_id}")
            return
        self.queried = q
        self.detail(detail_text(q))

    def tick(self) -> None:
        every = self.agen.namespace is None
        self.rows.apply([(t.id, row_cells(t, namespace=every)) for t in self.tasks])
        if self.queried is not None and self.queried.task.id == self.rows.cursor_key():
            self.detail(detail_text(self.queried))

    async def _act(self, verb: str, task: Task | None = None) -> None:
        task = task or self.selected()
        if task is None:
            return
        try:
            if verb == "cancelled":
                await self.client.call(r.CancelTask, CancelTaskRequest(id=task.id))
            elif verb == "held":
                await self.client.call(r.PauseTask, PauseTaskRequest(id=task.id))
            else:
                await self.client.call(r.ResumeTask, ResumeTaskRequest(id=task.id))
        except Exception as e:
            self.failed(e, f"task {task.id}")
            return
        self.notify(f"task {fmt.short_id(task.id)} {verb}")
        self.reload()

    def action_cancel_task(self) -> None:
        """Cancelling cannot be undone: ask first."""
        task = self.selected()
        if task is None:
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.cancel(task)

        self.app.push_screen(
            ConfirmDialog(
                f"Cancel task {fmt.short_id(task.id)} on {task.deployment}?",
                "Its run stops and the task ends cancelled; this cannot be undone.",
                yes="Cancel task",
            ),
            done,
        )

    @work(group="act")
    async def cancel(self, task: Task) -> None:
        await self._act("cancelled", task)

    @work(group="act")
    async def action_pause_task(self) -> None:
        await self._act("held")

    @work(group="act")
    async def action_resume_task(self) -> None:
        await self._act("resumed")

    def action_transcript(self) -> None:
        task = self.selected()
        if task is not None:
            self.agen.open_for("transcript", task.id)

    def action_trace(self) -> None:
        task = self.selected()
        if task is not None:
            self.agen.open_for("trace", task.id)


def row_cells(t: Task, *, namespace: bool = False) -> Cells:
    """A task's cells; with ``namespace`` (the all-namespaces view) the deployment is ns/name."""
    wait = (
        t.wait_reason or ("approval" if t.pending_approvals else "") or ("held" if t.held else "")
    )
    state = (
        f"{t.state} !effect" if t.effect_unknown else t.state
    )  # a side effect nobody confirmed: check it
    return (
        fmt.short_id(t.id),
        f"{t.namespace}/{t.deployment}" if namespace else t.deployment,
        state,
        wait,
        t.priority,
        fmt.age(t.created_ms),
        t.input.replace("\n", " ")[:50],
    )


def detail_text(q: QueryTaskResponse) -> str:
    t = q.task
    lines = [
        f"[b]{fmt.short_id(t.id)}[/b]  {t.deployment}  [b]{t.state}[/b]  priority {t.priority}  attempts {t.attempts}"
    ]
    if t.effect_unknown:
        lines.append(
            "[b yellow]effect unknown:[/b yellow] its run resumed past a side effect that was started and "
            "never confirmed; agen did not repeat it: check whether it took effect"
        )
    if t.wait_reason:
        lines.append(f"waiting: {t.wait_reason}")
    if t.wait_for:
        lines.append(f"waiting for: {t.wait_for}")
    if t.held:
        lines.append(f"held: {t.hold_reason or 'paused'}")
    if t.pending_approvals:
        lines.append(f"approvals pending: {', '.join(t.pending_approvals)} (press a)")
    if t.progress:
        lines.append(f"progress: {escape(json.dumps(t.progress, ensure_ascii=False))}")
    if q.run is not None:
        run = q.run
        lineage = f"root run {fmt.short_id(run.root_run_id)}" + (
            f", parent run {fmt.short_id(run.parent_run_id)}" if run.parent_run_id else ""
        )
        lines.append(
            f"run {fmt.short_id(run.id)} ({run.activity}{' ' + run.needs if run.needs else ''}) · {run.turns} turns · tokens {run.usage.input_tokens}/"
            f"{run.usage.output_tokens} · ${run.usage.cost_usd:.4f} · {lineage} · trace {fmt.short_id(run.trace_id)}"
        )
    if q.now is not None:
        lines.append(
            f"now: {q.now.doing}"
            + (f" {q.now.detail}" if q.now.detail else "")
            + f" for {fmt.age(q.now.since_ms)}"
        )
    if t.outcome:
        o = t.outcome
        lines.append(
            f"outcome: {o.get('status', '')}"
            + (f" ({o['reason']})" if o.get("reason") else "")
            + (f" — {escape(str(o['summary']))}" if o.get("summary") else "")
        )
    if t.error:
        lines.append(f"[red]error: {escape(t.error)}[/red]")
    return "\n".join(lines)
