"""Ask before a destructive key acts (cancel a task, stop a deployment, stop the whole fleet).

``y`` (or the red button) confirms; ``n``, escape and the focused-by-default Cancel button back out,
so a stray enter never destroys anything.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmDialog(ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "confirm", "Yes"),
        Binding("n,escape", "cancel", "No"),
    ]
    AUTO_FOCUS = "#cancel"

    def __init__(self, question: str, consequence: str, *, yes: str) -> None:
        super().__init__()
        self.question, self.consequence, self.yes = question, consequence, yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="dialog-title")
            yield Static(self.consequence, id="confirm-consequence")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes} (y)", variant="error", id="confirm")
                yield Button("Cancel (n)", id="cancel")

    @on(Button.Pressed, "#confirm")
    def action_confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)
