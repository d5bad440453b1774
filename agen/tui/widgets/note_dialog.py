"""Approve or deny with a note: returns (approve, note), or None when cancelled.

Deciding is deliberate: the dialog opens on Cancel (as the stop dialog does, so a stray enter never
decides anything), and approving takes its own key (``a``; ``d`` for a deny) or Enter on the Approve
button once focus was moved there. Enter in the note moves focus to that button rather than deciding.
The call is shown whole above the note, wrapped; when it is longer than the screen allows, a marker
says so and the arrow keys scroll it. The dialog's height follows the screen's, so its buttons are
always on screen (80x24 included).
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

CHROME_ROWS = 12
"""Rows the dialog needs besides the call's box: its border, title, marker, note, buttons and key hint."""
MIN_DETAIL_ROWS = 3


class DecisionDialog(ModalScreen[tuple[bool, str | None] | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("a", "decide(True)", "Approve"),
        Binding("d", "decide(False)", "Deny"),
        Binding("up", "scroll(-1)", "Scroll up", show=False),
        Binding("down", "scroll(1)", "Scroll down", show=False),
        Binding("pageup", "scroll(-8)", "Page up", show=False),
        Binding("pagedown", "scroll(8)", "Page down", show=False),
    ]
    AUTO_FOCUS = "#cancel"

    def __init__(self, what: str, approve: bool, *, details: RenderableType | None = None) -> None:
        super().__init__()
        self.what, self.approve, self.details = what, approve, details

    @property
    def key(self) -> str:
        """The one key that decides: ``a`` approves in an approve dialog, ``d`` denies in a deny one."""
        return "a" if self.approve else "d"

    def compose(self) -> ComposeResult:
        verb = "Approve" if self.approve else "Deny"
        with Vertical(classes="dialog decision"):
            yield Label(f"{verb} {self.what}?", classes="dialog-title")
            if self.details is not None:
                with VerticalScroll(classes="dialog-details", id="decision-scroll") as scroll:
                    scroll.can_focus = False  # tab goes note, buttons; the arrow keys scroll it
                    yield Static(self.details, id="decision-details")
                yield Static(
                    "long arguments — scroll (↑ ↓ PgUp PgDn) to read them all",
                    id="decision-long",
                )
            yield Input(
                placeholder="a note for the run and the record (optional)", id="note", compact=True
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button(
                    f"{verb} ({self.key})",
                    variant="success" if self.approve else "error",
                    id="decide",
                    compact=True,
                )
                yield Button("Cancel (esc)", id="cancel", compact=True)
            yield Static(
                f"{self.key}: {verb.lower()} · tab: note and buttons · esc: cancel",
                classes="dialog-hint",
            )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Only this dialog's decision has a key: ``d`` in an approve dialog does nothing."""
        if action == "decide":
            return parameters == (self.approve,)
        return True

    def on_mount(self) -> None:
        self._fit(self.app.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        """The call gets the rows the rest of the dialog leaves; the marker shows when it must scroll."""
        scrolls = self.query(VerticalScroll)
        if not scrolls:
            return
        scrolls.first().styles.max_height = max(MIN_DETAIL_ROWS, height - CHROME_ROWS)
        self.call_after_refresh(self._mark_long)

    def _mark_long(self) -> None:
        scroll = self.query_one("#decision-scroll", VerticalScroll)
        self.query_one("#decision-long").display = scroll.max_scroll_y > 0

    def action_scroll(self, rows: int) -> None:
        scrolls = self.query(VerticalScroll)
        if scrolls:
            scrolls.first().scroll_relative(y=rows, animate=False)

    @on(Input.Submitted)
    def _to_the_button(self) -> None:
        """Enter in the note does not decide: it moves to the button, whose Enter (or the key) does."""
        self.query_one("#decide", Button).focus()

    @on(Button.Pressed, "#decide")
    def _pressed(self) -> None:
        self.action_decide(self.approve)

    def action_decide(self, approve: bool) -> None:
        note = self.query_one(Input).value.strip()
        self.dismiss((approve, note or None))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
