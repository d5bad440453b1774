"""A failure inside the TUI of `agen up` never stops the Hub: the TUI says what failed and what to do,
r starts it again, q quits, and `agen up` then exits non-zero."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

import httpx
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.widgets import Static

import agen.tui.app
from agen.tui.app import AgenApp
from agen.tui.screens.fleet import FleetScreen
from agen.tui.session import TuiFailedApp, TuiSession
from tests.observe_helpers import embedded_hub, http_hub


class BuggyApp(AgenApp):
    """The TUI with a bug: z raises in its handler, as any screen's key might."""

    CSS_PATH = str(Path(agen.tui.app.__file__).parent / "agen.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("z", "bug", "Bug")]

    def action_bug(self) -> None:
        raise RuntimeError("a bug in a key handler")


async def wait_for(cond: object, what: str) -> None:
    assert callable(cond)
    for _ in range(600):
        if cond():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_failing_tui_says_so_the_hub_keeps_serving_and_quitting_exits_non_zero(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, _):
        session = TuiSession(
            lambda: BuggyApp(e.client, hub_label=url, stops_fleet=True), url, headless=True
        )
        running = asyncio.create_task(session.run())

        def tui_shown() -> bool:
            app = session.app
            return (
                isinstance(app, AgenApp) and app.is_running and isinstance(app.screen, FleetScreen)
            )

        async with httpx.AsyncClient(base_url=url) as http:
            for attempt in range(2):  # the first failure, then again after r started the TUI anew
                await wait_for(tui_shown, "the TUI")
                tui = session.app
                assert isinstance(tui, AgenApp)
                await Pilot[None](tui).press("z")

                def told() -> bool:
                    app = session.app
                    return isinstance(app, TuiFailedApp) and app.is_running

                await wait_for(told, "the failure screen")
                failed = session.app
                assert isinstance(failed, TuiFailedApp)
                await Pilot[bool](failed).pause()
                shown = str(failed.query_one("#failed-text", Static).content)
                assert "RuntimeError: a bug in a key handler" in shown
                assert "keeps serving" in shown and "r  start the TUI again" in shown
                assert (await http.get("/health")).status_code == 200
                assert not running.done() and not e.node.hub.shutdown_requested.is_set()
                await Pilot[bool](failed).press("r" if attempt == 0 else "q")
        await asyncio.wait_for(running, 30)
        assert session.failed and len(session.failures) == 2


async def test_quitting_a_tui_that_never_failed_is_no_failure(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        session = TuiSession(
            lambda: AgenApp(e.client, hub_label="test", stops_fleet=False), "test", headless=True
        )
        running = asyncio.create_task(session.run())
        await wait_for(lambda: session.app is not None and session.app.is_running, "the TUI")
        tui = session.app
        assert isinstance(tui, AgenApp)
        await Pilot[None](tui).press("q")
        await asyncio.wait_for(running, 30)
        assert not session.failed
