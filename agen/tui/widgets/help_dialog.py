"""`?`: every key of the current screen and the app, in one place."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, Static


class HelpDialog(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, lines: list[tuple[str, str]]) -> None:
        super().__init__()
        self.lines = lines

    def compose(self) -> ComposeResult:
        text = "\n".join(f"{key:>12}  {what}" for key, what in self.lines)
        with Vertical(classes="dialog help"):
            yield Label(
                "Keys (the command palette, ctrl+p, has every screen too)", classes="dialog-title"
            )
            yield Static(text)

    def action_close(self) -> None:
        self.dismiss(None)
