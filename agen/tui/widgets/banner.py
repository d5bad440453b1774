"""The lost-connection banner: says what is wrong and how to fix it, hidden while connected."""

from __future__ import annotations

from textual.reactive import reactive
from textual.widgets import Static


class ConnectionBanner(Static):
    lost: reactive[str | None] = reactive(None)
    """Why the Hub is unreachable, or None while connected."""

    def on_mount(self) -> None:
        from agen.tui.app import AgenApp

        if isinstance(self.app, AgenApp):
            self.lost = self.app.connection_lost

    def watch_lost(self, lost: str | None) -> None:
        self.display = lost is not None
        if lost is not None:
            self.update(
                f"Hub unreachable: {lost}\nStart one with `agen up` (or pass --hub); reconnecting…"
            )
