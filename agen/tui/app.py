"""The agen TUI: wires screens, keys, the command palette and the one event watcher."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import AwaitMount

from agen.client import Client
from agen.tui.messages import ConnectionChanged, HubChanged
from agen.tui.screens.base import AgenScreen
from agen.tui.screens.fleet import FleetScreen
from agen.tui.widgets.banner import ConnectionBanner
from agen.tui.widgets.help_dialog import HelpDialog


def _later(module: str, name: str) -> Callable[[], Screen[None]]:
    """A mode's screen, its module imported when the mode is first shown: the TUI opens on the Fleet,
    and importing every other screen first cost ~10 ms of its first paint (interleaved runs)."""

    def make() -> Screen[None]:
        import importlib

        screen: Screen[None] = getattr(
            importlib.import_module(f"agen.tui.screens.{module}"), name
        )()
        return screen

    return make


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
    ("h", "runs", "Runs: recent runs (history) with status, turns, tokens and cost"),
    ("g", "triggers", "Triggers: cron and webhook triggers, next fire time and last result"),
    ("m", "memory", "Memory: memory blocks, their versions and who wrote them"),
)
"""Screens reached by key, the command palette and help (?) but kept out of the footer (no room at 120 columns)."""


TICK_S = 1.0
"""How often the shown screen's ages and durations move on (AgenApp.tick)."""
HEADER_CHROME = 8 + 10 + len("agen — ")
"""Columns of the header that are not the sub-title: Textual's icon (8), the clock's space (10), the title."""


def header_text(hub: str, namespace: str, pending: int, width: int) -> str:
    """The header's sub-title for a terminal ``width`` wide: the pending approvals count always shows;
    the Hub's address is shortened, then ``namespace`` to ``ns``, then the Hub and the namespace go."""
    count = f"approvals pending: {pending}"
    bare = hub.removeprefix("http://").removeprefix("https://")
    for text in (
        f"{hub} · namespace: {namespace} · {count}",
        f"{bare} · namespace: {namespace} · {count}",
        f"{bare} · ns: {namespace} · {count}",
        f"ns: {namespace} · {count}",
    ):
        if len(text) <= width - HEADER_CHROME:
            return text
    return count


def screenshot_name(when: datetime, time_format: str | None = None) -> str:
    """``agen <time>.svg``, the time in ISO form unless a format is given, with the characters a file
    name cannot hold on some system (and dots and spaces) made underscores, as Textual names its own."""
    stamp = when.isoformat() if time_format is None else when.strftime(time_format)
    return "".join("_" if c in ' <>:"/\\|?*.' else c for c in f"agen {stamp}") + ".svg"


def declared_bindings(cls: type) -> list[tuple[str, Binding]]:
    """(key, binding) of what ``cls`` and its bases declare in BINDINGS, merged as Textual merges
    them (a class's bindings of a key replace its bases'; a key keeps its first place): the keys
    a screen or the app itself offers, whatever widget has the focus."""
    keys: dict[str, list[Binding]] = {}
    for base in reversed(cls.__mro__):
        declared: dict[str, list[Binding]] = {}
        for b in Binding.make_bindings(vars(base).get("BINDINGS", [])):
            declared.setdefault(b.key, []).append(b)
        keys.update(declared)
    return [(key, b) for key, bindings in keys.items() for b in bindings]


class AgenApp(App[None]):
    CSS_PATH = "agen.tcss"
    TITLE = "agen"
    DEFAULT_MODE = "fleet"
    """The TUI opens on the Fleet as its first mode: switching to it from Textual's blank default screen
    on mount built that screen, parsed the stylesheet twice more and held the first frame 50 ms."""
    MODES: ClassVar[dict[str, Callable[[], Screen[None]]]] = {  # type: ignore[assignment]
        "fleet": FleetScreen,
        "tasks": _later("tasks", "TasksScreen"),
        "approvals": _later("approvals", "ApprovalsScreen"),
        "transcript": _later("transcript", "TranscriptScreen"),
        "trace": _later("trace", "TraceScreen"),
        "events": _later("events", "EventsScreen"),
        "logs": _later("logs", "LogsScreen"),
        "memory": _later("memory", "MemoryScreen"),
        "runs": _later("runs", "RunsScreen"),
        "triggers": _later("triggers", "TriggersScreen"),
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(key, f"show('{mode}')", mode.capitalize()) for key, mode, _ in SCREENS_BY_KEY),
        *(
            Binding(key, f"show('{mode}')", mode.capitalize(), show=False)
            for key, mode, _ in MORE_SCREENS_BY_KEY
        ),
        Binding("N", "namespace", "Namespace", show=False),
        Binding("question_mark", "help", "Help", show=False),  # shown first, by AgenScreen
        Binding("q", "quit_app", "Quit"),
        Binding("ctrl+c", "interrupt", "Quit", show=False, priority=True),
    ]

    def __init__(
        self,
        client: Client,
        *,
        hub_label: str = "",
        watch: bool = True,
        stops_fleet: bool = False,
        screenshot_dir: Path | None = None,
        find_hub: Callable[[Client], Client | None] | None = None,
    ) -> None:
        super().__init__()
        self.client = client
        self.stops_fleet = stops_fleet
        """Run by `agen up`: quitting stops the Hub and every deployment with it, so q asks first."""
        self.find_hub = find_hub
        """While the Hub is unreachable: a client for the Hub to use instead, or None to keep trying
        this one (`agen tui` on the local `agen up` follows local.json to a restarted Hub)."""
        self.screenshot_dir = screenshot_dir
        """Where the palette's Screenshot saves (default: the current directory)."""
        self.hub_label = hub_label or client.url or "in-process Hub"
        self.watch_enabled = watch
        self.connection_lost: str | None = None
        self.pending_approvals = 0
        self.target: str | None = None
        """The task (or run) the Transcript and Trace screens show; set from Tasks or Approvals."""
        self.deployment: str | None = None
        """The deployment highlighted on the Fleet: the one Logs opens on."""
        self.agen_screens: list[AgenScreen] = []
        """Every screen mounted so far (one per mode; hidden ones keep what they drew)."""
        self.stream_up = False
        self._switching = False
        self._installed = {
            self.DEFAULT_MODE
        }  # the modes whose screen is built (DEFAULT_MODE: at start)
        self.namespace: str | None = "default"
        """The namespace every screen shows; None shows all of them (N switches)."""

    def on_mount(self) -> None:
        self.show_sub_title()
        self.count_approvals()
        if self.watch_enabled:
            self.watch_hub()
        self.set_interval(TICK_S, self.tick)

    def on_resize(self) -> None:
        self.show_sub_title()

    def tick(self) -> None:
        """Every second the shown screen re-renders its ages and "for 18s" from the data it has: they
        move on although no event arrived (a Hub call only comes with an event or a key)."""
        stack = self.screen_stack  # empty for a moment while a mode is switched to
        if stack and isinstance(stack[-1], AgenScreen) and stack[-1].loads:
            stack[-1].tick()

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
        if mode in self._installed:
            self._switching = True
        try:
            shown = super().switch_mode(mode)
        finally:
            self._switching = False
        self._installed.add(mode)
        return shown

    def style_key(self) -> tuple[object, ...]:
        """What the stylesheet's values follow (the theme, and the ANSI themes it maps to): a screen
        styled under the same key needs no restyling."""
        return (self.theme, self.ansi_theme_dark, self.ansi_theme_light)

    def refresh_css(self, animate: bool = True) -> None:
        """Textual restyles a screen on a mode switch unless it was shown when a mode was installed or
        the stylesheet last changed; every AgenScreen is styled when it mounts, so a switch back to
        one styled under the same key skips re-parsing and re-applying the whole stylesheet (over
        100 ms); a theme change restyles it on its next switch."""
        screen = self.screen_stack[-1] if self.screen_stack else None
        key = self.style_key()
        if self._switching and isinstance(screen, AgenScreen) and screen.styled_with == key:
            return
        super().refresh_css(animate)
        for shown in self.screen_stack:
            if isinstance(shown, AgenScreen):
                shown.styled_with = key

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
        from agen.tui.screens.tasks import TasksScreen

        self.switch_mode("tasks")
        screen = self.screen
        if isinstance(screen, TasksScreen):
            screen.set_filter(f"dep:{deployment}")

    def action_help(self) -> None:
        """agen's own keys: the shown screen's, then the app's (not the table's cursor keys and the like)."""
        lines: list[tuple[str, str]] = []
        seen: set[str] = set()
        # the screen's as it declares them (a key the focused table also binds, such as enter, is
        # the screen's too); the app's as they are active (Textual adds the palette's key to them)
        screens = declared_bindings(type(self.screen))
        apps = [(k, a.binding) for k, a in self.screen.active_bindings.items() if a.node is self]
        for bindings in (screens, apps):
            for key, b in bindings:
                if b.description and not b.system and key not in seen:
                    seen.add(key)
                    lines.append((self.get_key_display(b), b.description))
        self.push_screen(HelpDialog(lines))

    def action_quit_app(self) -> None:
        """q: leave the TUI; in `agen up` that stops the whole fleet, so it asks first."""
        if not self.stops_fleet:
            self.exit()
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.exit()

        from agen.tui.widgets.confirm_dialog import ConfirmDialog

        self.push_screen(
            ConfirmDialog(
                "Quit and stop agen up?",
                "The Hub drains: running tasks finish their current step, every deployment stops, and "
                "nothing runs until the next `agen up`. To leave the fleet running, use `agen up "
                "--headless` and `agen tui`.",
                yes="Stop agen up",
            ),
            done,
        )

    def action_interrupt(self) -> None:
        """Ctrl-C: what the docs promise for `agen up` (drain and stop), and plain quit for `agen tui`."""
        self.exit()

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """The palette's Screenshot: an SVG saved on this machine, and a toast saying where (in a browser,
        `agen ui`, Textual hands it to the browser as a download instead)."""
        if self.is_web:
            return super().deliver_screenshot(filename, path, time_format)
        folder = Path(path) if path else (self.screenshot_dir or Path.cwd())
        name = filename or screenshot_name(datetime.now(), time_format)
        target = folder / name
        try:
            folder.mkdir(parents=True, exist_ok=True)
            target.write_text(self.export_screenshot(), encoding="utf-8")
        except OSError as e:
            self.notify(f"Screenshot not saved: {target}: {e.strerror}", severity="error")
            return None
        self.notify(f"Screenshot saved to {target}", title="Screenshot")
        return str(target)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for key, mode, what in (*SCREENS_BY_KEY, *MORE_SCREENS_BY_KEY):
            yield SystemCommand(
                f"Go to {mode.capitalize()} ({key})", what, lambda m=mode: self.switch_mode(m)
            )
        yield SystemCommand(
            "Switch namespace (N)", "Show one namespace, or all of them", self.action_namespace
        )

    # --- the one event watcher --------------------------------------------------------
    @work(exclusive=True, group="watch")
    async def watch_hub(self) -> None:
        from agen.tui.watch import watch_events

        follow = None if self.find_hub is None else self.follow_hub
        await watch_events(lambda: self.client, self.post_message, follow=follow)  # type: ignore[arg-type]

    def follow_hub(self) -> bool:
        """Switch to the Hub ``find_hub`` names now, when it is another one (see ``find_hub``)."""
        assert self.find_hub is not None
        client = self.find_hub(self.client)
        if client is None:
            return False
        old, self.client = self.client, client
        self.run_worker(old.aclose(), group="close")
        self.hub_label = client.url or self.hub_label
        self.show_sub_title()
        return True

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
            pending = 0
            for ns in await self.namespaces():
                resp = await self.client.call(
                    r.ListApprovals, ListApprovalsRequest(namespace=ns, limit=1000)
                )
                pending += len(resp.approvals)
        except AgenError:
            return
        self.pending_approvals = pending
        self.show_sub_title()

    def show_sub_title(self) -> None:
        self.sub_title = header_text(
            self.hub_label, self.namespace or "all", self.pending_approvals, self.size.width
        )

    # --- namespaces ---------------------------------------------------------------------
    async def all_namespaces(self) -> list[str]:
        """Every namespace that has a deployment (and ``default``)."""
        from agen.api import registry as r
        from agen.wire.deployments import ListDeploymentsRequest

        resp = await self.client.call(
            r.ListDeployments, ListDeploymentsRequest(all_namespaces=True)
        )
        return sorted({"default", *(d.namespace for d in resp.deployments)})

    async def namespaces(self) -> list[str]:
        """The namespaces the screens load: the chosen one, or every one."""
        return [self.namespace] if self.namespace is not None else await self.all_namespaces()

    @work(exclusive=True, group="namespace")
    async def action_namespace(self) -> None:
        from agen.errors import AgenError
        from agen.tui.widgets.namespace_dialog import ALL, NamespaceDialog

        try:
            known = await self.all_namespaces()
        except AgenError as e:
            self.notify(f"listing namespaces: {e.message}", severity="error")
            return
        chosen = await self.push_screen_wait(NamespaceDialog(known, self.namespace))
        if chosen is not None:
            self.set_namespace(None if chosen == ALL else chosen)

    def set_namespace(self, namespace: str | None) -> None:
        """Show another namespace (None: all): every screen loads again."""
        self.namespace = namespace
        self.show_sub_title()
        for screen in self.agen_screens:
            screen.stale = True
        self.count_approvals()
        if isinstance(self.screen, AgenScreen):
            self.screen.reload()
