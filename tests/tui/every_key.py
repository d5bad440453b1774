"""Every bound key and Enter on every row of one screen, from a fresh `agen up` TUI, with the Hub answering
/health after each press: no key on any screen may stop the TUI (and with it, `agen up`).

The keys come from the code (the BINDINGS agen declares, active where the screen is shown: its own, the
focused widget's, the app's), so a new binding is covered without touching this file. Ctrl-C is not
pressed (it ends the app by design); q asks first in `agen up` and is answered no (escape).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from textual.binding import Binding
from textual.pilot import Pilot
from textual.screen import ModalScreen
from textual.widgets import Input, Tree

from agen.tui.app import MORE_SCREENS_BY_KEY, SCREENS_BY_KEY, AgenApp
from agen.tui.screens.base import AgenScreen
from agen.tui.widgets.table import FastTable
from tests.observe_helpers import MULTI_TOOL_SCRIPT, Embedded, embedded_hub, http_hub
from tests.tui.helpers import until

SIZES = {"wide": (160, 45), "narrow": (80, 24)}
MODES = [mode for _, mode, _ in (*SCREENS_BY_KEY, *MORE_SCREENS_BY_KEY)]
KEY_OF = {mode: key for key, mode, _ in (*SCREENS_BY_KEY, *MORE_SCREENS_BY_KEY)}
ENDS_THE_APP = {"interrupt"}
"""Actions that leave the TUI at once by design (Ctrl-C): pressing them ends the test's app."""
SWITCHES = "show("
"""The keys that switch screens run one action (switch_mode) from any screen: each is pressed first
thing on a fresh app (opening its screen) and from the Fleet; from every other screen, f (leaving it)
stands for them all. Composing a screen costs ~1 s on a loaded 2-core machine: all ten from all ten
screens would take this test past its budget (60 s for both sizes)."""
LIVES_WITH_SCREEN = {"watch", "tail"}
"""Worker groups that run for the app's or the screen's life (the event watcher, a log tail): the rest
finish after a key press, and their failure would stop the app."""


@dataclass
class Fleet:
    hub: Embedded
    http: httpx.AsyncClient


async def seed(e: Embedded) -> None:
    """Rows on every screen that can have them: a deployment with a trigger, a finished multi-tool run
    (transcript, trace, runs), a task waiting for an approval, a memory block."""
    from agen.api import registry as r
    from agen.wire.memory import SetMemoryRequest

    trigger = {"name": "hourly", "type": "cron", "schedule": "@hourly", "input": "tick"}
    config = {"kind": "pool", "scale": {"min": 1, "max": 2}, "triggers": [trigger]}
    await e.deploy("scribe", script=MULTI_TOOL_SCRIPT, config=config)
    await e.run("scribe", "summarise")
    await e.deploy_gated()
    gated = await e.submit("gated", "ship")
    await e.client.call(r.SetMemory, SetMemoryRequest(label="rules", value="be kind"))
    from agen.wire.approvals import ListApprovalsRequest

    async def pending() -> bool:
        resp = await e.client.call(r.ListApprovals, ListApprovalsRequest())
        return any(a.task_id == gated.id for a in resp.approvals)

    for _ in range(600):  # the gated task reaches its approval (an MCP server starts first)
        if await pending():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the gated task never asked for its approval")


async def press_everything_everywhere(tmp_path: Path, size: tuple[int, int]) -> dict[str, str]:
    """Every screen in turn, each on a fresh app against one seeded Hub: open it by its key, press Enter
    on every row, then every bound key. Returns, per screen, what went wrong (empty: nothing)."""
    problems: dict[str, str] = {}
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, _):
        await seed(e)
        async with httpx.AsyncClient(base_url=url) as http:
            for mode in MODES:
                app = AgenApp(e.client, hub_label="test", stops_fleet=True)
                try:
                    async with app.run_test(size=size) as pilot:
                        pressed = await _drive(app, pilot, mode, http)
                    assert any(p.startswith("question_mark") for p in pressed), pressed
                except Exception as error:  # every screen is tried; the test names each that failed
                    problems[mode] = f"{type(error).__name__}: {error}"
    return problems


async def _drive(app: AgenApp, pilot: Pilot[Any], mode: str, http: httpx.AsyncClient) -> list[str]:
    pressed: list[str] = []

    async def after(what: str) -> None:
        """Back out of any dialog, let the press's work finish, check the app and the Hub still run."""
        pressed.append(what)
        while True:
            await until(pilot, lambda: quiet(app) or asking(app), f"the work started by {what}")
            if not asking(app):
                break
            await press(pilot, "escape")
        assert app.is_running, f"{what} on {mode} stopped the TUI"
        resp = await http.get("/health")
        assert resp.status_code == 200, f"after {what} on {mode}: /health {resp.status_code}"

    async def home() -> None:
        """Back on the screen under test, its table (not a filter box) taking the keys."""
        if app.current_mode != mode or not isinstance(app.screen, AgenScreen):
            await app.switch_mode(mode)
            await pilot.pause(0)
        if app.focused is None or isinstance(app.focused, Input):
            for widget in app.screen.query("FastTable, Tree"):
                widget.focus()
                break
            else:
                app.screen.set_focus(None)

    await until(pilot, lambda: isinstance(app.screen, AgenScreen) and quiet(app), "the fleet")
    if mode != "fleet":  # the screen is opened by its key: nothing else was opened before
        await press(pilot, KEY_OF[mode])
        await after(KEY_OF[mode])
    screen = app.screen
    assert isinstance(screen, AgenScreen) and app.current_mode == mode, (mode, screen)
    await until(pilot, lambda: loaded(app, screen), f"{mode} loaded")

    for kind in (FastTable, Tree):
        for index in range(len(list(screen.query(kind)))):
            await home()
            rows = _rows(list(screen.query(kind))[index])
            for row in range(rows):
                await home()
                widget = list(screen.query(kind))[index]
                if row >= _rows(widget):  # an action on an earlier row changed the rows
                    break
                widget.focus()
                _move(widget, row)
                await press(pilot, "enter")
                await after(f"enter on row {row} of {widget.id or type(widget).__name__}")

    await home()
    for key, action in own_bindings(app):
        switch = action.startswith(SWITCHES) and key in KEY_OF.values()  # not R/W: a screen's own
        if mode != "fleet" and switch and action != "show('fleet')":
            continue  # see SWITCHES
        await home()
        await press(pilot, key)
        await after(f"{key} ({action})")
    return pressed


def own_bindings(app: AgenApp) -> list[tuple[str, str]]:
    """The keys agen's code binds where the screen is shown (the screen's, its focused widget's, the
    app's), as (key, action); not the cursor keys (Textual's, or FastTable's, which tests/tui/test_table.py
    drives), nor the palette, nor those ending the app."""
    declared: set[tuple[str, str]] = set()
    for active in app.screen.active_bindings.values():
        for cls in type(active.node).__mro__:
            own = vars(cls).get("BINDINGS")
            if cls.__module__.startswith("agen.") and own and cls is not FastTable:
                declared.update((b.key, b.action) for b in Binding.make_bindings(own))
    return [
        (key, active.binding.action)
        for key, active in app.screen.active_bindings.items()
        if (key, active.binding.action) in declared
        and active.binding.action.removeprefix("app.") not in ENDS_THE_APP
    ]


async def press(pilot: Pilot[Any], key: str) -> None:
    """A key as the terminal sends it, handled before this returns. (Pilot.press also waits for the
    process to go idle, up to a second twice per key, which a Hub in the same process seldom is.)"""
    pilot.app.simulate_key(key)
    await pilot.pause(0)


def _rows(widget: Any) -> int:
    if isinstance(widget, FastTable):
        return int(widget.row_count)
    assert isinstance(widget, Tree)
    return int(widget.last_line) + 1


def _move(widget: Any, row: int) -> None:
    if isinstance(widget, FastTable):
        widget.move_cursor(row=row)
    else:
        widget.cursor_line = row


def loaded(app: AgenApp, screen: AgenScreen) -> bool:
    """The screen's first load is done (a log tail, which streams, has started)."""
    started = any(w.node is screen and w.group in LIVES_WITH_SCREEN for w in app.workers)
    return (screen.loads > 0 or started) and quiet(app)


def asking(app: AgenApp) -> bool:
    return app.is_running and isinstance(app.screen, ModalScreen)


def quiet(app: AgenApp) -> bool:
    """No worker left running but those that live as long as the app or a screen."""
    return not app.is_running or all(
        w.is_finished or w.group in LIVES_WITH_SCREEN for w in app.workers
    )
