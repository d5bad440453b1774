"""Runs (h) lists recent runs and opens their transcript; Triggers (g) shows next fire time and last result."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static

from agen.tui.app import AgenApp
from agen.tui.screens.runs import RunsScreen
from agen.tui.screens.transcript import TranscriptScreen
from agen.tui.screens.triggers import TriggersScreen, last_result
from agen.tui.widgets.table import FastTable
from agen.wire.signals import TriggerEvent
from tests.observe_helpers import MULTI_TOOL_SCRIPT, embedded_hub
from tests.tui.helpers import cells, until

TRIGGERS = [
    {"name": "hourly", "type": "cron", "schedule": "@hourly", "input": "tick"},
    {"name": "hook", "type": "webhook"},
]


async def test_runs_screen_lists_runs_filters_them_and_opens_a_transcript(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        task = await e.run("scribe", "summarise")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("h")
            await until(pilot, lambda: isinstance(app.screen, RunsScreen), "the runs screen")
            screen = app.screen
            assert isinstance(screen, RunsScreen)
            table = screen.query_one("#runs", FastTable)
            await until(pilot, lambda: table.row_count == 1, "the run")
            row = [str(c) for c in table.get_row_at(0)]
            assert row[1] == "scribe" and row[2] == "succeeded" and row[4] == "3"
            assert row[5] == "540/80" and row[6] == "$0.0052"
            box = screen.query_one("#run-filter", Input)
            box.value = "status:failed"
            await box.action_submit()
            await until(pilot, lambda: table.row_count == 0, "no failed runs")
            box.value = "status:broken"
            await box.action_submit()
            note = screen.query_one("#run-filter-note", Static)
            await until(pilot, lambda: "unknown state 'broken'" in str(note.content), "why")
            box.value = ""
            await box.action_submit()
            await until(pilot, lambda: table.row_count == 1, "the run again")
            await pilot.press("R")
            await until(pilot, lambda: isinstance(app.screen, TranscriptScreen), "its transcript")
            assert app.target == screen.runs[0].id and screen.runs[0].task_id == task.id


async def test_triggers_screen_shows_next_fire_time_and_last_result(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("sched", config={"kind": "pool", "triggers": TRIGGERS})
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("g")
            await until(pilot, lambda: isinstance(app.screen, TriggersScreen), "triggers")
            table = app.screen.query_one("#triggers", FastTable)
            await until(pilot, lambda: table.row_count == 2, "both triggers")
            assert cells(table, 1) == ["hook", "hourly"]
            assert cells(table, 3)[0] == "on call"
            assert cells(table, 3)[1].startswith("in ") and cells(table, 3)[1].endswith("Z)")
            assert cells(table, 4) == ["never fired", "never fired"]


def test_last_result_says_how_the_newest_firing_went() -> None:
    from agen.tui import fmt

    event = TriggerEvent(
        id="E",
        trigger_name="hourly",
        status="skipped",
        reason="overlap: the previous run is still going",
        created_ms=fmt.now_ms() - 120_000,
    )
    assert last_result(event) == "skipped 2m ago: overlap: the previous run is still going"


async def test_s_on_a_run_records_a_score_and_a_note_as_feedback(tmp_path: Path) -> None:
    from agen.api import registry as r
    from agen.tui.widgets.feedback_dialog import FeedbackDialog
    from agen.wire.feedback import ListFeedbackRequest

    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        task = await e.run("scribe", "summarise")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("h")
            await until(pilot, lambda: isinstance(app.screen, RunsScreen), "the runs screen")
            table = app.screen.query_one("#runs", FastTable)
            await until(pilot, lambda: table.row_count == 1, "the run")
            await pilot.press("s")
            await until(pilot, lambda: isinstance(app.screen, FeedbackDialog), "the dialog")
            dialog = app.screen
            await pilot.press("2", "enter", "enter")  # out of range: said, the dialog stays
            problem = dialog.query_one("#score-problem", Static)
            await until(pilot, lambda: "from -1.0 to 1.0" in str(problem.content), "the problem")
            dialog.query_one("#score", Input).value = "-0.5"
            dialog.query_one("#note", Input).value = "missed the point"
            dialog.query_one("#note", Input).focus()
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, RunsScreen), "back on the runs")

            await app.workers.wait_for_complete()  # the RecordFeedback call, off the UI
            fb = await e.client.call(r.ListFeedback, ListFeedbackRequest())
            assert [(f.score, f.note, f.task_id) for f in fb.feedback] == [
                (-0.5, "missed the point", task.id)
            ]
