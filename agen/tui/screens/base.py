"""What every screen shares: the client, one coalescing load worker, refresh on the events that concern it.

Screens are installed once (one per mode) and keep what they last drew, so a switch paints at once;
a screen reloads on resume only when it may be out of date. Events reaching a hidden screen only mark
it stale; events reaching the shown one start a load, or one more after the load in flight (a burst
of events costs at most two loads, and a load is never cancelled half way by the next event).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Header

from agen.errors import AgenError
from agen.tui.messages import HubChanged
from agen.tui.widgets.banner import ConnectionBanner
from agen.tui.widgets.footer import KeysFooter

if TYPE_CHECKING:
    from agen.client import Client
    from agen.tui.app import AgenApp
    from agen.wire.signals import Event

FRESH_S = 15.0
"""Without an event saying so, what a screen shows is trusted this long (ages drift, streams drop)."""


class AgenScreen(Screen[None]):
    """A screen that loads from the Hub in a worker and reloads when its events arrive."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("question_mark", "app.help", "Help")]
    """Help comes first in the footer: at 80 columns it and the screen's keys stay visible (the screen
    switching keys after them are cut first; the palette and help list those)."""

    WATCHES: ClassVar[tuple[str, ...]] = ()
    """Event type prefixes that concern this screen (``task.``, ``approval.``, ...)."""

    loads = 0
    """How many loads (or live appends) have finished and been applied (benchmarks and tests wait on it)."""

    def __init__(self) -> None:
        super().__init__()
        self.stale = True
        """Never loaded, or events touched what it shows while it was hidden."""
        self.loaded_at = 0.0
        self.styled_with: tuple[object, ...] | None = None
        """AgenApp.style_key when the stylesheet was last applied to this screen (None: never)."""
        self._loading = False
        self._again = False

    @property
    def agen(self) -> AgenApp:
        from agen.tui.app import AgenApp

        assert isinstance(self.app, AgenApp)
        return self.app

    @property
    def client(self) -> Client:
        return self.agen.client

    def compose(self) -> ComposeResult:
        yield Header(icon="≡")  # Textual's default icon (⭘) is missing from common terminal fonts
        yield ConnectionBanner()
        yield from self.body()
        yield KeysFooter()

    def body(self) -> ComposeResult:
        yield from ()

    @on(events.Mount)
    def _register(self) -> None:
        self.agen.agen_screens.append(self)
        # Mounting styled every widget with the current stylesheet. Textual records that only for the
        # screen shown when a mode is installed, so the next switch here would re-parse and re-apply the
        # whole stylesheet (over 100 ms): AgenApp.refresh_css skips that for a screen styled under the
        # same theme; a theme change after this still restyles on switch.
        self.styled_with = self.agen.style_key()

    @on(events.ScreenResume)
    def _keep_styles(self, event: events.ScreenResume) -> None:
        """Styles do not change while a screen is hidden (a theme change restyles it on switch), so a
        resume skips re-applying the stylesheet to every widget, most of a switch's remaining cost."""
        event.refresh_styles = False

    @on(events.Resize)
    def _fit_columns(self, event: events.Resize) -> None:
        """Every table of this screen shows the columns that fit its new width."""
        from agen.tui.rows import KeyedRows

        for value in list(vars(self).values()):
            if isinstance(value, KeyedRows):
                value.fit(event.size.width)

    def on_screen_resume(self) -> None:
        if (
            self.outdated()
        ):  # what it showed last is painted first; the load starts after that frame
            self.call_after_refresh(self.start_load)

    def outdated(self) -> bool:
        """Whether a resume should reload: events touched it, or nothing would have said so."""
        return self.stale or not self.agen.live or time.monotonic() - self.loaded_at > FRESH_S

    def missed(self, events: list[Event]) -> None:
        """Events that concern this screen arrived while it was hidden."""
        self.stale = True

    def concerns(self, message: HubChanged) -> bool:
        return bool(self.WATCHES) and message.touches(*self.WATCHES)

    @on(HubChanged)
    def _hub_changed(self, message: HubChanged) -> None:
        if self.concerns(message):
            self.changed(message.events)

    def changed(self, events: list[Event]) -> None:
        """Events that concern the shown screen arrived: load (screens may fetch only what changed)."""
        self.start_load()

    def reload(self) -> None:
        """Load everything this screen shows (after an action, or when asked to)."""
        self.start_load()

    def start_load(self) -> None:
        """Load now, or once more right after the load in flight."""
        if self._loading:
            self._again = True
            return
        self._loading = True
        self._load_loop()

    @work(group="load")
    async def _load_loop(self) -> None:
        try:
            again = True
            while again:
                self._again = self.stale = False
                try:
                    await self.load()
                finally:
                    self.loads += 1
                    self.loaded_at = time.monotonic()
                    if self.loads == 1:  # this screen and its first data are here to stay
                        self.call_after_refresh(self.agen.settle_heap)
                again = self._again
        finally:
            self._loading = False

    async def load(self) -> None:
        """Fetch what the screen shows and apply it (changed rows only where it can)."""

    def tick(self) -> None:
        """Once a second while shown: re-render what tells time (ages, "for 18s") from the data already
        loaded, without calling the Hub. Screens that show no time leave it as is."""

    def action_show(self, mode: str) -> None:
        """A screen's ``R`` and ``W``: the selected item's transcript or trace (its ``action_transcript``
        or ``action_trace``). They are bound to the app's ``r`` and ``w`` action string, so the footer,
        which lists keys by action, shows one Transcript and one Trace (the screen's key, first)."""
        opener = getattr(self, f"action_{mode}", None)
        if callable(opener):
            opener()
        else:
            self.agen.action_show(mode)

    def failed(self, error: Exception, what: str) -> None:
        text = error.message if isinstance(error, AgenError) else f"{type(error).__name__}: {error}"
        self.notify(f"{what}: {text}", severity="error", timeout=8)
