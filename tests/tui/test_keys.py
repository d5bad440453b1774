"""Keys that destroy ask first; Ctrl-C quits; help lists agen's keys; screenshots say where they went;
toasts keep off the detail pane; spend bars use glyphs every common font has."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static
from textual.widgets._toast import Toast

from agen.tui import fmt
from agen.tui.app import AgenApp
from agen.tui.screens.fleet import FleetScreen
from agen.tui.screens.tasks import TasksScreen
from agen.tui.widgets.confirm_dialog import ConfirmDialog
from agen.tui.widgets.help_dialog import HelpDialog
from tests.observe_helpers import embedded_hub
from tests.tui.helpers import until

SIZE = (120, 40)


async def test_q_in_agen_up_asks_before_stopping_the_fleet_and_n_keeps_it(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        app = AgenApp(e.client, hub_label="test", watch=False, stops_fleet=True)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet")
            await pilot.press("q")
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the question")
            assert "stop agen up" in str(app.screen.query_one(".dialog-title", Static).content)
            await pilot.press("n")
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "back on the fleet")
            assert app.is_running
            await pilot.press("q")
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the question")
            await pilot.press("y")
            await until(pilot, lambda: not app.is_running, "the app to quit")


async def test_q_in_agen_tui_quits_at_once_and_ctrl_c_quits_as_the_docs_say(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e:
        for key in ("q", "ctrl+c"):
            app = AgenApp(e.client, hub_label="test", watch=False)
            async with app.run_test(size=SIZE) as pilot:
                shown = app

                def on_fleet(a: AgenApp = shown) -> bool:
                    return isinstance(a.screen, FleetScreen)

                def stopped(a: AgenApp = shown) -> bool:
                    return not a.is_running

                await until(pilot, on_fleet, "the fleet")
                await pilot.press(key)
                await until(pilot, stopped, f"{key} to quit")
        up = AgenApp(e.client, hub_label="test", watch=False, stops_fleet=True)
        async with up.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(up.screen, FleetScreen), "the fleet")
            await pilot.press("ctrl+c")  # docs: Ctrl-C drains and stops agen up
            await until(pilot, lambda: not up.is_running, "ctrl+c to stop agen up")


async def test_help_lists_agens_keys_and_not_the_tables_internal_bindings(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TasksScreen), "tasks")
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, HelpDialog), "help")
            help_screen = app.screen
            assert isinstance(help_screen, HelpDialog)
            text = "\n".join(f"{k} {w}" for k, w in help_screen.lines)
            for wanted in ("Cancel", "Filter", "Transcript", "Fleet", "Memory", "Help", "Quit"):
                assert wanted in text, text
            for internal in ("Cursor", "Select", "Scroll", "Page", "cursor"):
                assert internal not in text, text


async def test_palette_screenshot_saves_an_svg_and_says_where(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        app = AgenApp(e.client, hub_label="test", watch=False, screenshot_dir=tmp_path / "shots")
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet")
            [command] = [c for c in app.get_system_commands(app.screen) if c.title == "Screenshot"]
            command.callback()
            await until(pilot, lambda: any((tmp_path / "shots").glob("*.svg")), "the SVG file")
            [saved] = (tmp_path / "shots").glob("*.svg")
            assert saved.read_text().startswith("<svg")
            await until(
                pilot,
                lambda: any(str(saved) in n.message for n in app._notifications),
                "a toast naming the file",
            )


async def test_toasts_stay_off_the_detail_pane(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        await e.run("hello", "one")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TasksScreen), "tasks")
            detail = app.screen.query_one("#task-detail")
            await until(pilot, lambda: "outcome" in str(detail.render()), "the task detail")
            app.notify("a long message " * 6, timeout=30)
            await until(pilot, lambda: bool(app.screen.query(Toast)), "the toast")
            await pilot.pause()
            toast = app.screen.query_one(Toast).region
            assert not toast.overlaps(detail.region), (toast, detail.region)


def test_spend_bars_use_full_and_light_shade_blocks() -> None:
    bar = fmt.spend_bar(0.3, 1.0)
    assert bar == "███░░░░░░░ $0.30/$1.00"
    assert "▰" not in bar and "▱" not in bar
