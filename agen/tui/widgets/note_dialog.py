"""Approve or deny with a note: returns (approve, note), or None when cancelled.

The dialog shows what is decided (a tool call's full arguments) above the note, scrolling when long.
"""

from __future__ import annotations

from rich.console import RenderableType
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


class DecisionDialog(ModalScreen[tuple[bool, str | None] | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    AUTO_FOCUS = "#note"

    def __init__(self, what: str, approve: bool, *, details: RenderableType | None = None) -> None:
        super().__init__()
        self.what, self.approve, self.details = what, approve, details

    def compose(self) -> ComposeResult:
        verb = "Approve" if self.approve else "Deny"
        with Vertical(classes="dialog"):
            yield Label(f"{verb} {self.what}?", classes="dialog-title")
            if self.details is not None:
                with VerticalScroll(classes="dialog-details"):
                    yield Static(self.details, id="decision-details")
            yield Input(placeholder="a note for the run and the record (optional)", id="note")
            with Horizontal(classes="dialog-buttons"):
                yield Button(verb, variant="success" if self.approve else "error", id="decide")
                yield Button("Cancel", id="cancel")

    @on(Input.Submitted)
    @on(Button.Pressed, "#decide")
    def _decide(self) -> None:
        note = self.query_one(Input).value.strip()
        self.dismiss((self.approve, note or None))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
