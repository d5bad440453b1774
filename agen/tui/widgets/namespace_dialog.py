"""N: pick the namespace every screen shows, or all of them at once."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

ALL = "*"
"""The option id for every namespace (not a valid namespace name, so it cannot clash)."""


class NamespaceDialog(ModalScreen[str | None]):
    """Returns the chosen namespace, ``ALL``, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, namespaces: list[str], current: str | None) -> None:
        super().__init__()
        self.namespaces, self.current = namespaces, current

    def compose(self) -> ComposeResult:
        options = [Option("all namespaces", id=ALL)] + [Option(ns, id=ns) for ns in self.namespaces]
        with Vertical(classes="dialog"):
            yield Label("Show which namespace?", classes="dialog-title")
            yield OptionList(*options, id="namespaces")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = options.get_option_index(self.current or ALL)

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
