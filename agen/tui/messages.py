"""Messages the event watcher posts: what changed on the Hub, and the connection's state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from agen.wire.signals import Event


class HubChanged(Message, bubble=False):
    """New events from the Hub's event log; screens refresh what they show from them."""

    def __init__(self, events: list[Event]) -> None:
        super().__init__()
        self.events = events

    def touches(self, *prefixes: str) -> bool:
        return any(e.type.startswith(prefixes) for e in self.events)


class ConnectionChanged(Message, bubble=False):
    def __init__(self, up: bool, detail: str = "") -> None:
        super().__init__()
        self.up = up
        self.detail = detail
