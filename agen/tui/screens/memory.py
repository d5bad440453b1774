"""Memory: a namespace's memory blocks with their versions; the highlighted block's value and its
history (who wrote each version, a run or a person, and when). Memory writes are not events, so the
screen re-reads when shown (after FRESH_S) and on ctrl+r."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from agen.api import registry as r
from agen.tui import fmt
from agen.tui.rows import Cells, KeyedRows
from agen.tui.screens.base import AgenScreen
from agen.tui.widgets.table import FastTable
from agen.wire.memory import ListMemoryRequest, MemoryBlockSummary, MemoryHistoryRequest

NAMESPACE = "default"
HISTORY_SHOWN = 5


def who(kind: str | None, author: str | None) -> str:
    if not author:
        return "-"
    return f"run {fmt.short_id(author)}" if kind == "run" else author


class MemoryScreen(AgenScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+r", "reload_memory", "Refresh")]

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[MemoryBlockSummary] = []

    def body(self) -> ComposeResult:
        yield Static(
            "No memory blocks yet. Agents write the blocks their config.json `memory` attaches; "
            "`agen memory set ID` sets one.",
            id="memory-empty",
            classes="empty",
        )
        yield FastTable(id="memory", cursor_type="row", zebra_stripes=True)
        yield Static("", id="memory-detail", classes="detail")

    def on_mount(self) -> None:
        self.rows = KeyedRows(
            self.query_one("#memory", FastTable),
            ("ID", "TITLE", ("VERSION", 100), ("SIZE", 100), "UPDATED", "BY"),
        )
        self.query_one("#memory-empty").display = False

    def action_reload_memory(self) -> None:
        self.reload()

    async def load(self) -> None:
        try:
            blocks = (
                await self.client.call(r.ListMemory, ListMemoryRequest(namespace=NAMESPACE))
            ).blocks
        except Exception as e:
            self.failed(e, "loading memory blocks")
            return
        self.blocks = blocks
        self.rows.apply([(b.label, self._cells(b)) for b in blocks])
        self.query_one("#memory-empty").display = not blocks
        self.rows.table.display = bool(blocks)
        self.query_one("#memory-detail").display = bool(blocks)
        key = self.rows.cursor_key()
        if key is not None:
            self.show_detail(key)

    @staticmethod
    def _cells(b: MemoryBlockSummary) -> Cells:
        return (
            b.label,
            b.title or "-",
            str(b.version),
            f"{b.chars}/{b.limit_chars}",
            fmt.age(b.updated_ms),
            who(b.author_kind, b.author),
        )

    @on(FastTable.RowHighlighted, "#memory")
    def _highlighted(self, event: FastTable.RowHighlighted) -> None:
        if event.row_key.value:
            self.show_detail(event.row_key.value)

    @work(exclusive=True, group="detail")
    async def show_detail(self, label: str) -> None:
        try:
            hist = await self.client.call(
                r.MemoryHistory,
                MemoryHistoryRequest(namespace=NAMESPACE, label=label, limit=HISTORY_SHOWN),
            )
        except Exception as e:
            self.failed(e, f"loading memory block {label}")
            return
        text = Text()
        if hist.versions:
            cur = hist.versions[0]
            text.append(f"{label} · version {hist.current_version}", style="bold")
            if cur.description:
                text.append(f" · {cur.description}")
            text.append(f"\n{cur.value or '(empty)'}\n")
        text.append("history: ", style="bold")
        text.append(
            "   ".join(
                f"v{v.version} {fmt.age(v.created_ms)} {who(v.author_kind, v.author)}"
                + (f" ({v.note})" if v.note else "")
                for v in hist.versions
            )
        )
        self.query_one("#memory-detail", Static).update(text)
