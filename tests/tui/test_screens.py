"""Every screen driven through its actions with Pilot, against a real embedded Hub and fake-model agents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.screen import Screen
from textual.widgets import Input, RichLog, Static, Tree

from agen.api import registry as r
from agen.tui.app import AgenApp
from agen.tui.screens.approvals import ApprovalsScreen
from agen.tui.screens.events import EventsScreen
from agen.tui.screens.fleet import FleetScreen
from agen.tui.screens.logs import LogsScreen
from agen.tui.screens.tasks import TasksScreen
from agen.tui.screens.trace import TraceScreen
from agen.tui.screens.transcript import TranscriptScreen
from agen.tui.widgets.confirm_dialog import ConfirmDialog
from agen.tui.widgets.help_dialog import HelpDialog
from agen.tui.widgets.input_dialog import InputDialog
from agen.tui.widgets.table import FastTable
from agen.wire.deployments import ListDeploymentsRequest
from agen.wire.tasks import GetTaskRequest
from tests.observe_helpers import MULTI_TOOL_SCRIPT, embedded_hub
from tests.tui.helpers import cells, until

SIZE = (120, 40)


async def test_empty_fleet_says_how_to_deploy_and_every_screen_is_one_key_away(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e:
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet screen")
            empty = app.screen.query_one("#fleet-empty", Static)
            await until(pilot, lambda: bool(empty.display), "the empty-fleet hint")
            assert "agen deploy bundles/hello" in str(empty.render())
            for key, screen in (
                ("t", TasksScreen),
                ("a", ApprovalsScreen),
                ("r", TranscriptScreen),
                ("w", TraceScreen),
                ("e", EventsScreen),
                ("l", LogsScreen),
                ("f", FleetScreen),
            ):
                await pilot.press(key)

                def shown(s: type[Screen[Any]] = screen) -> bool:
                    return isinstance(app.screen, s)

                await until(pilot, shown, f"{screen.__name__} on {key}")
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, HelpDialog), "the help dialog")
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "help closed")
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert "Go to Approvals (a)" in titles and "Go to Trace (w)" in titles


async def test_fleet_scales_stops_starts_and_runs_a_task_through_the_input_dialog(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello", config={"kind": "pool", "scale": {"min": 1, "max": 3}})
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            table = app.screen.query_one("#deployments", FastTable)
            await until(pilot, lambda: table.row_count == 1, "the deployment row")
            assert cells(table, 0) == ["hello"] and cells(table, 1) == ["pool"]

            await pilot.press("s")
            await until(pilot, lambda: isinstance(app.screen, InputDialog), "the scale dialog")
            app.screen.query_one(Input).value = "3"
            await pilot.press("enter")
            await until(pilot, lambda: cells(table, 4)[0].startswith("3/"), "desired 3")

            await pilot.press("x")  # stopping asks first; n keeps it running
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the stop question")
            await pilot.press("n")
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "back, not stopped")
            assert cells(table, 2) != ["stopped (paused)"]
            await pilot.press("x")
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the stop question")
            await pilot.press("y")
            await until(pilot, lambda: cells(table, 2) == ["stopped (paused)"], "stopped (paused)")
            await pilot.press("x")  # starting again does not ask
            await until(pilot, lambda: cells(table, 2) != ["stopped (paused)"], "started again")

            await pilot.press("n")
            await until(pilot, lambda: isinstance(app.screen, InputDialog), "the run dialog")
            app.screen.query_one(Input).value = "hi there"
            await pilot.press("enter")
            await until(pilot, lambda: app.target is not None, "a submitted task")
            assert app.target is not None
            task = (
                await e.client.call(r.GetTask, GetTaskRequest(id=app.target, wait_seconds=30))
            ).task
            assert task.state == "succeeded" and task.input == "hi there"
            [dep] = (await e.client.call(r.ListDeployments, ListDeploymentsRequest())).deployments
            assert dep.desired == 1 and not dep.paused  # start goes back to scale.min


async def test_tasks_filter_detail_cancel_pause_and_resume(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        await e.deploy("parked", config={"kind": "pool", "scale": {"min": 0, "max": 1}})
        later_ms = (
            e.node.hub.clock() + 3_600_000
        )  # scheduled: stays queued while the test drives it
        done = await e.run("hello", "first", labels={"team": "docs"})
        queued = await e.submit("parked", "later", not_before_ms=later_ms)
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TasksScreen), "the tasks screen")
            screen = app.screen
            assert isinstance(screen, TasksScreen)
            table = screen.query_one("#tasks", FastTable)
            await until(pilot, lambda: table.row_count == 2, "two tasks")

            screen.set_filter("team=docs")
            await until(
                pilot, lambda: [t.id for t in screen.tasks] == [done.id], "the label filter"
            )
            detail = screen.query_one("#task-detail", Static)
            await until(pilot, lambda: "outcome: done" in str(detail.render()), "the task detail")
            assert "root run" in str(detail.render())

            screen.set_filter("dep:parked queued")
            await until(
                pilot,
                lambda: [t.id for t in screen.tasks] == [queued.id],
                "deployment + state filter",
            )
            table.focus()
            await pilot.press("p")
            await until(pilot, lambda: bool(screen.tasks and screen.tasks[0].held), "the task held")
            await pilot.press("u")
            await until(
                pilot, lambda: bool(screen.tasks and not screen.tasks[0].held), "the hold ended"
            )
            await pilot.press("c")  # cancelling asks first
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the cancel question")
            await pilot.press("y")
            await until(pilot, lambda: app.screen is screen, "back on Tasks")
            screen.set_filter("dep:parked")
            await until(
                pilot,
                lambda: bool(screen.tasks and screen.tasks[0].state == "cancelled"),
                "cancelled",
            )


async def test_transcript_folds_tool_calls_and_trace_draws_the_waterfall(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        task = await e.run("scribe", "summarise")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("t")
            await until(
                pilot,
                lambda: isinstance(app.screen, TasksScreen) and bool(app.screen.tasks),
                "tasks",
            )
            await pilot.press("R")
            await until(pilot, lambda: isinstance(app.screen, TranscriptScreen), "the transcript")
            tree = app.screen.query_one(Tree)
            await until(pilot, lambda: len(tree.root.children) == 4, "user + three assistant turns")
            labels = [str(n.label) for n in tree.root.children]
            assert labels[0] == "user" and "tokens 120 in / 24 out" in labels[1]
            call = tree.root.children[2].children[0]
            assert str(call.label).startswith("→ save_artifact(") and not call.is_expanded
            assert str(call.children[0].label).startswith('{"content"')  # the folded arguments
            assert any(str(c.label).startswith("← result: saved artifact") for c in call.children)
            await pilot.press("o")
            assert call.is_expanded
            head = app.screen.query_one("#transcript-head", Static)
            assert task.id[-10:] in str(head.render())

            await pilot.press("w")
            await until(pilot, lambda: isinstance(app.screen, TraceScreen), "the trace")
            screen = app.screen
            assert isinstance(screen, TraceScreen)
            await until(pilot, lambda: screen.trace is not None, "the waterfall")
            assert screen.trace is not None
            assert [
                s.attrs.get("agen.tool.name") for s in screen.trace.spans if s.name == "agen.tool"
            ] == ["report_progress", "save_artifact", "report_progress"]  # call order


async def test_events_tail_filters_and_logs_tail_a_deployment(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        await e.run("hello", "one")
        app = AgenApp(e.client, hub_label="test")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("e")
            await until(pilot, lambda: isinstance(app.screen, EventsScreen), "the events screen")
            table = app.screen.query_one(FastTable)
            await until(pilot, lambda: "deployment.created" in cells(table, 2), "the event tail")
            app.screen.query_one(Input).value = "task."
            await app.screen.query_one(Input).action_submit()
            await until(
                pilot,
                lambda: (
                    bool(cells(table, 2)) and all(t.startswith("task.") for t in cells(table, 2))
                ),
                "the type filter",
            )
            before = table.row_count
            await e.run("hello", "two")  # arrives through the one watcher, not a refetch
            await until(pilot, lambda: table.row_count > before, "live events")

            await pilot.press("l")
            await until(pilot, lambda: isinstance(app.screen, LogsScreen), "the logs screen")
            log = app.screen.query_one(RichLog)
            await until(
                pilot,
                lambda: any("created from" in str(line.text) for line in log.lines),
                "log lines",
            )
