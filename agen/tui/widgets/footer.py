"""The key-binding footer, rebuilt only when the keys it shows change.

Textual's Footer recomposes (unmounts and mounts a widget per key, each restyled) whenever a
screen's bindings are refreshed, which happens on every screen switch and focus change; with
the same keys that is most of a switch's cost and draws nothing new.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    def __init__(self) -> None:
        super().__init__()
        self._shown: tuple[tuple[str, str, bool], ...] | None = None

    def bindings_changed(self, screen: Screen[object]) -> None:
        shown = tuple(
            (b.key, b.description, enabled)
            for _, b, enabled, _ in screen.active_bindings.values()
            if b.show
        )
        if shown == self._shown and self._bindings_ready:
            return
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._shown = shown  # super() recomposes now
        super().bindings_changed(screen)
