"""What every screen shares: the client, a reload worker, refresh on the events that concern it."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Header

from agen.errors import AgenError
from agen.tui.messages import HubChanged
from agen.tui.widgets.banner import ConnectionBanner

if TYPE_CHECKING:
    from agen.client import Client
    from agen.tui.app import AgenApp


class AgenScreen(Screen[None]):
    """A screen that loads from the Hub in a worker and reloads when its events arrive."""

    WATCHES: ClassVar[tuple[str, ...]] = ()
    """Event type prefixes that make this screen reload (``task.``, ``approval.``, ...)."""

    loads = 0
    """How many loads have finished and been drawn (benchmarks and tests wait on it)."""

    @property
    def agen(self) -> AgenApp:
        from agen.tui.app import AgenApp

        assert isinstance(self.app, AgenApp)
        return self.app

    @property
    def client(self) -> Client:
        return self.agen.client

    def compose(self) -> ComposeResult:
        yield Header()
        yield ConnectionBanner()
        yield from self.body()
        yield Footer()

    def body(self) -> ComposeResult:
        yield from ()

    def on_screen_resume(self) -> None:
        self.reload()

    def reload(self) -> None:
        """Start (or restart) this screen's load worker."""

    @on(HubChanged)
    def _hub_changed(self, message: HubChanged) -> None:
        if self.WATCHES and message.touches(*self.WATCHES):
            self.reload()

    def failed(self, error: Exception, what: str) -> None:
        text = error.message if isinstance(error, AgenError) else f"{type(error).__name__}: {error}"
        self.notify(f"{what}: {text}", severity="error", timeout=8)
