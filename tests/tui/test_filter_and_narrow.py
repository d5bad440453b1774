"""The filter takes free text and key:value and names what it does not know; at 80×24 the screen's keys
and Help stay in the footer and the least needed columns make way."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static
from textual.widgets._footer import FooterKey

from agen.tui.app import AgenApp
from agen.tui.filter import parse_filter
from agen.tui.screens.fleet import FleetScreen
from agen.tui.screens.tasks import STATES, TASK_KEYS, TasksScreen
from agen.tui.widgets.table import FastTable
from tests.observe_helpers import embedded_hub
from tests.tui.helpers import until


def test_free_text_key_value_and_labels_parse_and_unknowns_are_named() -> None:
    f = parse_filter("dep:hello team=docs Digest running", TASK_KEYS, STATES)
    assert f.fields == {"dep": "hello", "state": "running"}
    assert f.labels == {"team": "docs"} and f.words == ["digest"] and not f.problems
    assert f.matches(("x", "the weekly DIGEST")) and not f.matches(("x", "report"))
    bad = parse_filter("colour:red state:runing", TASK_KEYS, STATES)
    assert bad.problems == [
        "unknown filter key 'colour' (use d:, dep:, deployment:, s:, state:, k=v or free text)",
        "unknown state 'runing' (one of " + ", ".join(STATES) + ")",
    ]


async def test_tasks_filter_matches_free_text_in_visible_columns_and_reports_typos(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        await e.run("hello", "alpha report")
        await e.run("hello", "beta digest")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TasksScreen), "tasks")
            screen = app.screen
            assert isinstance(screen, TasksScreen)
            table = screen.query_one("#tasks", FastTable)
            note = screen.query_one("#task-filter-note", Static)
            await until(pilot, lambda: table.row_count == 2, "both tasks")
            screen.set_filter("digest")
            await until(pilot, lambda: table.row_count == 1, "the one matching task")
            assert "beta digest" in str(table.get_row_at(0)[-1])
            assert str(note.content) == "1 of 2 match 'digest'"
            screen.set_filter("colour:red")
            await until(pilot, lambda: "unknown filter key 'colour'" in str(note.content), "why")
            assert note.has_class("error") and table.row_count == 1  # a typo keeps what is shown
            box = screen.query_one("#task-filter", Input)
            box.value = "state:runing"
            await box.action_submit()
            await until(pilot, lambda: "unknown state 'runing'" in str(note.content), "why")


async def test_at_80x24_help_and_the_screen_keys_stay_visible_and_columns_make_way(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet")
            table = app.screen.query_one("#deployments", FastTable)
            await until(pilot, lambda: table.row_count == 1, "the deployment")
            await pilot.pause()
            shown = {
                k.description: k.region
                for k in app.screen.query(FooterKey)
                if k.description and k.region.width
            }
            for wanted in ("Help", "Scale", "Stop/Start", "Run task"):
                assert wanted in shown and shown[wanted].right <= 80, (wanted, shown)
            labels = [str(c.label) for c in table.columns.values()]
            assert labels == ["NAME", "ACTIVITY", "FAILED (1h)", "DESIRED/READY", "QUEUED/RUNNING"]
            await pilot.resize_terminal(160, 45)
            await until(pilot, lambda: len(table.columns) == 8, "every column back")
            assert [str(c.label) for c in table.columns.values()][1] == "KIND"
