"""Runs: recent runs with status, activity, turns, tokens and cost; filter; open a run's transcript or
trace; rate one (s: a score and a note, kept as feedback)."""

from __future__ import annotations

from typing import ClassVar, get_args

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, Static

from agen.api import registry as r
from agen.tui import fmt
from agen.tui.filter import parse_filter
from agen.tui.rows import Cells, KeyedRows
from agen.tui.screens.base import AgenScreen
from agen.tui.widgets.feedback_dialog import FeedbackDialog
from agen.tui.widgets.filter_box import FilterBox
from agen.tui.widgets.table import FastTable
from agen.wire.feedback import RecordFeedbackRequest
from agen.wire.observe import ListRunsRequest, Run, RunStatus

LIMIT = 200
STATUSES: tuple[str, ...] = get_args(RunStatus)
RUN_KEYS = {"status": "status", "state": "status", "s": "status", "dep": "dep", "d": "dep"}
RUN_KEYS["deployment"] = "dep"


class RunsScreen(AgenScreen):
    AUTO_FOCUS = "#runs"
    WATCHES = ("run.", "task.")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_filter", "Filter"),
        Binding("R", "show('transcript')", "Transcript"),  # one footer entry with r
        Binding("W", "show('trace')", "Trace"),
        Binding("s", "rate", "Feedback"),
        Binding("enter", "transcript", "Transcript", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Run] = []

    def body(self) -> ComposeResult:
        yield FilterBox(
            placeholder="filter: status:failed dep:hello team=docs or any text   (enter applies)",
            id="run-filter",
            leave_to="#runs",
        )
        yield Static("", id="run-filter-note", classes="filter-note")
        yield Static(
            "No runs match. Runs appear as tasks start (`agen run <deployment> <input>`).",
            id="runs-empty",
            classes="empty",
        )
        yield FastTable(id="runs", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.rows = KeyedRows(
            self.query_one("#runs", FastTable),
            (
                "RUN",
                "DEPLOYMENT",
                "STATUS",
                ("ACTIVITY", 100),  # narrower screens drop these first
                "TURNS",
                ("TOKENS in/out", 120),
                "COST",
                ("SOURCE", 140),
                "AGE",
                ("DURATION", 110),
            ),
        )
        self.query_one("#runs-empty").display = False
        self.query_one("#run-filter-note").display = False

    def action_focus_filter(self) -> None:
        self.query_one("#run-filter", Input).focus()

    @on(Input.Submitted, "#run-filter")
    def _filter(self) -> None:
        self.query_one("#runs", FastTable).focus()
        self.reload()

    async def load(self) -> None:
        f = parse_filter(
            self.query_one("#run-filter", Input).value, RUN_KEYS, STATUSES, state_key="status"
        )
        note = self.query_one("#run-filter-note", Static)
        if f.problems:
            note.update(f.describe(0, 0))
            note.set_class(True, "error")
            note.display = True
            return
        every = self.agen.namespace is None
        status = f.fields.get("status")
        try:
            found: list[Run] = []
            for ns in await self.agen.namespaces():
                resp = await self.client.call(
                    r.ListRuns,
                    ListRunsRequest(
                        namespace=ns,
                        deployment=f.fields.get("dep"),
                        status=status,  # checked against STATUSES above
                        labels=f.labels,
                        limit=LIMIT,
                    ),
                )
                found.extend(resp.runs)
        except Exception as e:
            self.failed(e, "loading runs")
            return
        found.sort(key=lambda run: run.started_ms, reverse=True)
        rows = [(run.id, run_cells(run, namespace=every)) for run in found[:LIMIT]]
        shown = [(key, cells) for key, cells in rows if f.matches(self.rows.visible(cells))]
        keep = {key for key, _ in shown}
        self.runs = [run for run in found if run.id in keep]
        said = f.describe(len(shown), len(rows))
        note.update(said)
        note.set_class(False, "error")
        note.display = bool(said)
        self.rows.apply(shown)
        self.query_one("#runs-empty").display = not shown
        self.rows.table.display = bool(shown)

    def tick(self) -> None:
        every = self.agen.namespace is None
        shown = self.rows.rows
        self.rows.apply(
            [(run.id, run_cells(run, namespace=every)) for run in self.runs if run.id in shown]
        )

    def selected(self) -> Run | None:
        table = self.query_one("#runs", FastTable)
        if not self.runs or not 0 <= table.cursor_row < len(self.runs):
            self.notify("No run selected", severity="warning")
            return None
        return self.runs[table.cursor_row]

    def action_transcript(self) -> None:
        run = self.selected()
        if run is not None:
            self.agen.open_for("transcript", run.id)

    def action_trace(self) -> None:
        run = self.selected()
        if run is not None:
            self.agen.open_for("trace", run.id)

    def action_rate(self) -> None:
        """A score and a note on the selected run (RecordFeedback), as `agen feedback record` does."""
        run = self.selected()
        if run is None:
            return

        def done(answer: tuple[float, str | None] | None) -> None:
            if answer is not None:
                self.rate(run, *answer)

        self.app.push_screen(FeedbackDialog(f"run {fmt.short_id(run.id)} ({run.deployment})"), done)

    @work(group="act")
    async def rate(self, run: Run, score: float, note: str | None) -> None:
        try:
            await self.client.call(
                r.RecordFeedback,
                RecordFeedbackRequest(namespace=run.namespace, id=run.id, score=score, note=note),
            )
        except Exception as e:
            self.failed(e, "recording feedback")
            return
        self.notify(f"feedback {score:+.2f} recorded on run {fmt.short_id(run.id)}")
        self.reload()


def run_cells(run: Run, *, namespace: bool = False) -> Cells:
    status = f"{run.status} !effect" if run.effect_unknown else run.status
    return (
        fmt.short_id(run.id),
        f"{run.namespace}/{run.deployment}" if namespace else run.deployment,
        status,
        f"{run.activity} {run.needs}" if run.needs else run.activity,
        str(run.turns),
        f"{run.usage.input_tokens}/{run.usage.output_tokens}",
        f"${run.usage.cost_usd:.4f}",
        run.source,
        fmt.age(run.started_ms),
        run_duration(run),
    )


def run_duration(run: Run) -> str:
    """How long a finished run took ("…" while it runs); snapshot tests pin it."""
    return fmt.duration(run.finished_ms - run.started_ms) if run.finished_ms else "…"
