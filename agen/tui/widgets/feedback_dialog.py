"""Rate a run: a score from -1.0 (bad) to 1.0 (good) and an optional note; returns (score, note), or
None when cancelled. Enter in the score moves to the note; Enter in the note records. A score that is
not a number in range is said in the dialog, which stays open."""

from __future__ import annotations

import math
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


def parse_score(text: str) -> float | None:
    """The score typed, or None when it is not a number from -1.0 to 1.0 (``+1``, ``-0.5``, ``1``)."""
    try:
        score = float(text.strip())
    except ValueError:
        return None
    return score if not math.isnan(score) and -1.0 <= score <= 1.0 else None


class FeedbackDialog(ModalScreen[tuple[float, str | None] | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]
    AUTO_FOCUS = "#score"

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Feedback on {self.what}", classes="dialog-title")
            yield Input(placeholder="score: -1.0 (bad) to 1.0 (good)", id="score", compact=True)
            yield Input(
                placeholder="a note: what went well or wrong (optional)", id="note", compact=True
            )
            yield Static("", id="score-problem", classes="filter-note error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Record", variant="primary", id="record", compact=True)
                yield Button("Cancel (esc)", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#score-problem").display = False

    @on(Input.Submitted, "#score")
    def _to_note(self) -> None:
        self.query_one("#note", Input).focus()

    @on(Input.Submitted, "#note")
    @on(Button.Pressed, "#record")
    def _record(self) -> None:
        text = self.query_one("#score", Input).value
        score = parse_score(text)
        if score is None:
            problem = self.query_one("#score-problem", Static)
            problem.update(f"score {text.strip()[:20]!r}: type a number from -1.0 to 1.0")
            problem.display = True
            self.query_one("#score", Input).focus()
            return
        note = self.query_one("#note", Input).value.strip()
        self.dismiss((score, note or None))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
