"""Live means live: ages and "now: … for 18s" move on every second with no event; the filter box lets
go with Escape and empties with Ctrl-U; the header keeps the pending approvals count at 80x24; Logs
opens on the deployment highlighted on the Fleet. The clock is injected (agen.tui.fmt.now_ms)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static
from textual.widgets._footer import FooterKey

from agen.tui import fmt
from agen.tui.app import HEADER_CHROME, AgenApp, header_text
from agen.tui.screens.fleet import FleetScreen
from agen.tui.screens.logs import LogsScreen
from agen.tui.screens.tasks import TasksScreen
from agen.tui.widgets.confirm_dialog import ConfirmDialog
from agen.tui.widgets.table import FastTable
from tests.observe_helpers import embedded_hub
from tests.tui.helpers import until

SIZE = (120, 40)
HOUR_MS = 3_600_000


class Clock:
    """The TUI's clock, moved by the test: no sleeping for ages to change."""

    def __init__(self) -> None:
        self.offset_ms = 0
        self.real = fmt.now_ms

    def __call__(self) -> int:
        return self.real() + self.offset_ms


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(fmt, "now_ms", c)
    return c


async def test_ages_and_the_now_line_move_on_with_the_clock_without_an_event(
    tmp_path: Path, clock: Clock
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated()
        task = await e.submit("gated", "ship")
        assert (await e.wait(task.id)).pending_approvals
        app = AgenApp(e.client, hub_label="test", watch=False)  # no events: only the clock moves
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TasksScreen), "tasks")
            table = app.screen.query_one("#tasks", FastTable)
            detail = app.screen.query_one("#task-detail", Static)
            await until(pilot, lambda: "now: approval" in str(detail.content), "the now line")
            age = [str(c.label) for c in table.columns.values()].index("AGE")
            assert str(table.get_row_at(0)[age]).endswith("s")
            screen = app.screen
            assert isinstance(screen, TasksScreen)
            loads = screen.loads
            clock.offset_ms = 2 * HOUR_MS
            await until(pilot, lambda: str(table.get_row_at(0)[age]) == "2h", "the age to move on")
            await until(pilot, lambda: "for 2h" in str(detail.content), "the now line to move on")
            assert screen.loads == loads  # re-rendered from what it had: no Hub call


def focused(app: AgenApp) -> str | None:
    return app.focused.id if app.focused is not None else None


async def test_escape_leaves_the_filter_and_ctrl_u_empties_it(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        await e.run("hello", "one")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TasksScreen), "tasks")
            table = app.screen.query_one("#tasks", FastTable)
            box = app.screen.query_one("#task-filter", Input)
            await until(pilot, lambda: table.row_count == 1, "the task")
            await pilot.press("slash", *"state:failed")
            assert focused(app) == "task-filter" and box.value == "state:failed"
            await pilot.press("escape")
            assert focused(app) == "tasks" and box.value == ""  # left, and nothing was applied
            await pilot.press("slash", *"state:running", "left", "left", "ctrl+u")
            assert box.value == ""  # the whole box, wherever the cursor is
            await pilot.press(*"hello", "enter")
            assert focused(app) == "tasks"
            await pilot.press("slash", *" more", "escape")
            assert box.value == "hello" and focused(app) == "tasks"  # back to what is applied
            await pilot.press("c")  # the screen's keys work again: c asks to cancel the task
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the question")


async def test_the_footer_lists_each_key_once(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        await e.run("hello", "one")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(200, 40)) as pilot:
            for key in ("t", "a", "h"):
                await pilot.press(key)
                await pilot.pause(0.3)
                said = [k.description for k in app.screen.query(FooterKey) if k.description]
                assert len(said) == len(set(said)), said
                assert "Transcript" in said
            await pilot.press("R")  # the screen's key still opens the selection's transcript
            await until(pilot, lambda: app.current_mode == "transcript", "the run's transcript")


def test_the_header_keeps_the_approvals_count_and_shortens_the_rest_first() -> None:
    hub = "http://127.0.0.1:7070"
    assert header_text(hub, "default", 3, 160) == (
        "http://127.0.0.1:7070 · namespace: default · approvals pending: 3"
    )
    for width in (80, 70, 60, 50):
        text = header_text(hub, "default", 3, width)
        assert text.endswith("approvals pending: 3") and len(text) <= width - HEADER_CHROME, width
    assert (
        header_text(hub, "default", 3, 80) == "127.0.0.1:7070 · ns: default · approvals pending: 3"
    )


async def test_logs_open_on_the_deployment_highlighted_on_the_fleet(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("alpha")
        await e.deploy("beta")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet")
            table = app.screen.query_one("#deployments", FastTable)
            await until(pilot, lambda: table.row_count == 2, "both deployments")
            await pilot.press("down")
            await pilot.press("l")
            await until(pilot, lambda: isinstance(app.screen, LogsScreen), "logs")
            box = app.screen.query_one("#log-filter", Input)
            await until(pilot, lambda: box.value == "beta", "the highlighted deployment's log")
            await pilot.press("f", "up", "l")
            await until(pilot, lambda: box.value == "alpha", "the log following the Fleet")
            await pilot.press("slash", *"beta created", "enter", "f", "l")
            await pilot.pause(0.3)
            assert box.value == "beta created"  # what was entered here stays


async def test_event_ages_move_on_with_the_clock(tmp_path: Path, clock: Clock) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("e")
            table = app.screen.query_one("#events", FastTable)
            await until(pilot, lambda: table.row_count > 0, "the events")
            assert str(table.get_row_at(0)[1]).endswith("s")
            clock.offset_ms = 3 * HOUR_MS
            await until(pilot, lambda: str(table.get_row_at(0)[1]) == "3h", "the age to move on")
