"""The agen TUI: wires screens, keys, the command palette and the one event watcher."""

from __future__ import annotations

import gc
from collections.abc import Iterable
from typing import ClassVar

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import AwaitMount

from agen.client import Client
from agen.tui.messages import ConnectionChanged, HubChanged
from agen.tui.screens.approvals import ApprovalsScreen
from agen.tui.screens.base import AgenScreen
from agen.tui.screens.events import EventsScreen
from agen.tui.screens.fleet import FleetScreen
from agen.tui.screens.logs import LogsScreen
from agen.tui.screens.memory import MemoryScreen
from agen.tui.screens.tasks import TasksScreen
from agen.tui.screens.trace import TraceScreen
from agen.tui.screens.transcript import TranscriptScreen
from agen.tui.widgets.banner import ConnectionBanner
from agen.tui.widgets.help_dialog import HelpDialog

SCREENS_BY_KEY: tuple[tuple[str, str, str], ...] = (
    ("f", "fleet", "Fleet: deployments, instances, scale, stop/start, run a task"),
    ("t", "tasks", "Tasks: filter, detail, cancel, pause/resume"),
    ("a", "approvals", "Approvals: approve or deny pending tool calls"),
    ("r", "transcript", "Transcript: what a run sent and got back"),
    ("w", "trace", "Trace: the span waterfall of a task"),
    ("e", "events", "Events: the live event log"),
    ("l", "logs", "Logs: a deployment's live log"),
)
MORE_SCREENS_BY_KEY: tuple[tuple[str, str, str], ...] = (
    ("m", "memory", "Memory: memory blocks, their versions and who wrote them"),
)
"""Screens reached by key, the command palette and help (?) but kept out of the footer (no room at 120 columns)."""


class AgenApp(App[None]):
    CSS_PATH = "agen.tcss"
    TITLE = "agen"
    MODES: ClassVar[dict[str, type[Screen[None]]]] = {  # type: ignore[assignment]
        "fleet": FleetScreen,
        "tasks": TasksScreen,
        "approvals": ApprovalsScreen,
        "transcript": TranscriptScreen,
        "trace": TraceScreen,
        "events": EventsScreen,
        "logs": LogsScreen,
        "memory": MemoryScreen,
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(key, f"show('{mode}')", mode.capitalize()) for key, mode, _ in SCREENS_BY_KEY),
        *(
            Binding(key, f"show('{mode}')", mode.capitalize(), show=False)
            for key, mode, _ in MORE_SCREENS_BY_KEY
        ),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, client: Client, *, hub_label: str = "", watch: bool = True) -> None:
        super().__init__()
        self.client = client
        self.hub_label = hub_label or client.url or "in-process Hub"
        self.watch_enabled = watch
        self.connection_lost: str | None = None
        self.pending_approvals = 0
        self.target: str | None = None
        """The task (or run) the Transcript and Trace screens show; set from Tasks or Approvals."""
        self.agen_screens: list[AgenScreen] = []
        """Every screen mounted so far (one per mode; hidden ones keep what they drew)."""
        self.stream_up = False
        self._switching = False

    def on_mount(self) -> None:
        self.sub_title = self.hub_label
        self.switch_mode("fleet")
        self.count_approvals()
        if self.watch_enabled:
            self.watch_hub()

    def on_unmount(self) -> None:
        gc.unfreeze()

    def settle_heap(self) -> None:
        """Keep what is loaded so far out of the garbage collector's full passes.

        A full collection walks every tracked object (the Hub's too when `agen up` runs the TUI in its
        process): over 100 ms on a loaded 2-core machine, landing on whatever frame is being drawn.
        After each screen's first load the long-lived objects (modules, widgets, caches) are frozen
        (after one last collection, so no garbage is frozen); later full passes walk only what came
        after. Leaving the app unfreezes them.
        """
        gc.collect()
        gc.freeze()

    @property
    def live(self) -> bool:
        """Whether events arrive: then a screen no event touched is up to date."""
        return self.watch_enabled and self.stream_up and self.connection_lost is None

    # --- navigation -------------------------------------------------------------------
    def switch_mode(self, mode: str) -> AwaitMount:
        """Textual holds every frame 50 ms on a mode switch (App.delay_update) to mask a screen being
        composed; a screen already installed has nothing to mask, so its switch paints at once."""
        if mode in self._screen_stacks:
            self._switching = True
        try:
            return super().switch_mode(mode)
        finally:
            self._switching = False

    def delay_update(self, delay: float = 0.05) -> None:
        if not self._switching:
            super().delay_update(delay)

    def action_show(self, mode: str) -> None:
        self.switch_mode(mode)

    def open_for(self, mode: str, target: str | None) -> None:
        """Show the Transcript or Trace of a task or run (it reloads on resume when the target changed)."""
        self.target = target
        if self.current_mode == mode and isinstance(self.screen, AgenScreen):
            self.screen.reload()
        else:
            self.switch_mode(mode)

    def open_tasks(self, deployment: str) -> None:
        """Tasks filtered to one deployment (enter on a Fleet row)."""
        self.switch_mode("tasks")
        screen = self.screen
        if isinstance(screen, TasksScreen):
            screen.set_filter(f"dep:{deployment}")

    def action_help(self) -> None:
        lines = [
            (a.binding.key_display or a.binding.key, a.binding.description)
            for a in self.screen.active_bindings.values()
            if a.binding.description
        ]
        self.push_screen(HelpDialog(lines))

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for key, mode, what in (*SCREENS_BY_KEY, *MORE_SCREENS_BY_KEY):
            yield SystemCommand(
                f"Go to {mode.capitalize()} ({key})", what, lambda m=mode: self.switch_mode(m)
            )

    # --- the one event watcher --------------------------------------------------------
    @work(exclusive=True, group="watch")
    async def watch_hub(self) -> None:
        from agen.tui.watch import watch_events

        await watch_events(self.client, self.post_message)  # type: ignore[arg-type]

    @on(HubChanged)
    def _forward(self, message: HubChanged) -> None:
        """The shown screen refreshes from the events; hidden ones only note they are out of date."""
        if message.touches("approval.", "task.", "run.finished"):
            self.count_approvals()
        for screen in self.agen_screens:
            if screen is self.screen:
                screen.post_message(HubChanged(message.events))
            elif screen.concerns(message):
                screen.missed(message.events)

    @on(ConnectionChanged)
    def _connection(self, message: ConnectionChanged) -> None:
        was_lost = self.connection_lost is not None
        self.connection_lost = None if message.up else (message.detail or "connection lost")
        self.stream_up = message.up
        for banner in self.screen.query(ConnectionBanner):
            banner.lost = self.connection_lost
        if message.up and was_lost:
            self.count_approvals()
            for screen in self.agen_screens:  # events may have been missed while down
                screen.stale = True
            if isinstance(self.screen, AgenScreen):
                self.screen.reload()

    @work(exclusive=True, group="approvals-count")
    async def count_approvals(self) -> None:
        from agen.api import registry as r
        from agen.errors import AgenError
        from agen.wire.approvals import ListApprovalsRequest

        try:
            resp = await self.client.call(r.ListApprovals, ListApprovalsRequest(limit=1000))
        except AgenError:
            return
        self.pending_approvals = len(resp.approvals)
        self.sub_title = f"{self.hub_label} · approvals pending: {self.pending_approvals}"
