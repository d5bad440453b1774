"""A screen's filter box: Enter applies it, Escape leaves it, Ctrl-U empties it.

Focus never stays trapped in the box: Escape puts back the filter last applied (what the list shows)
and hands focus to the list, so the screen's keys work again. Ctrl-U empties the whole box, wherever
the cursor is (readline's kill-line, which Textual's Input only does left of the cursor).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.binding import Binding, BindingType
from textual.widgets import Input


class FilterBox(Input):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "Leave the filter", show=False),
        Binding("ctrl+u", "empty", "Empty the filter", show=False),
    ]

    def __init__(self, value: str = "", *, leave_to: str, placeholder: str, id: str) -> None:
        super().__init__(value, placeholder=placeholder, id=id)
        self.leave_to = leave_to
        """The selector of the widget Escape focuses (the list the filter filters)."""
        self.applied = value
        """The text the list is filtered by now."""

    @on(Input.Submitted)
    def _applied(self, event: Input.Submitted) -> None:
        self.applied = event.value  # the screen applies it: the message goes on to it

    def set_applied(self, text: str) -> None:
        """The screen filters by ``text`` (set from elsewhere, Enter on a Fleet row)."""
        self.value = self.applied = text

    def action_leave(self) -> None:
        self.value = self.applied
        self.screen.query_one(self.leave_to).focus()

    def action_empty(self) -> None:
        self.value = ""
