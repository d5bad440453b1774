"""Events: a live tail of the event log (fed by the app's one watcher), filtered by type,
deployment or severity."""

from __future__ import annotations

import json
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual.widgets import Input

from agen.api import registry as r
from agen.tui import fmt
from agen.tui.messages import HubChanged
from agen.tui.screens.base import AgenScreen
from agen.tui.widgets.filter_box import FilterBox
from agen.tui.widgets.table import FastTable
from agen.wire.signals import Event, ListEventsRequest

KEEP = 1000
PAGE = 500


def matches(e: Event, text: str) -> bool:
    """``task. dep:hello sev:warning``: type prefixes, deployment, severity; all must hold."""
    for word in text.split():
        key, sep, value = word.partition(":")
        if sep and key in ("dep", "d"):
            if e.deployment != value:
                return False
        elif sep and key in ("sev", "severity"):
            if e.severity != value:
                return False
        elif not e.type.startswith(word):
            return False
    return True


class EventsScreen(AgenScreen):
    AUTO_FOCUS = "#events"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("slash", "focus_filter", "Filter")]

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Event] = []

    def body(self) -> ComposeResult:
        yield FilterBox(
            placeholder="filter: task. approval. dep:hello sev:warning   (enter applies)",
            id="event-filter",
            leave_to="#events",
        )
        yield FastTable(id="events", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.columns = self.query_one(FastTable).add_columns(
            "SEQ", "AGE", "TYPE", "SEVERITY", "DEPLOYMENT", "TASK", "DATA"
        )

    def tick(self) -> None:
        """The ages of the rows in view move on (up to KEEP rows: the ones scrolled away wait)."""
        table = self.query_one(FastTable)
        if not table.row_count:
            return
        by_seq = {str(e.seq): e for e in self.events}
        top = int(table.scroll_offset.y)
        for row in range(top, min(table.row_count, top + table.size.height)):
            key = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key
            event = by_seq.get(str(key.value))
            if event is None:
                continue
            age = fmt.age(event.created_ms)
            if table.get_cell(key, self.columns[1]) != age:
                table.update_cell(key, self.columns[1], age)

    def action_focus_filter(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _filter(self) -> None:
        self.query_one(FastTable).focus()
        self.render_rows()

    def concerns(self, message: HubChanged) -> bool:
        return True

    def changed(self, events: list[Event]) -> None:
        self.append(events)

    def missed(self, events: list[Event]) -> None:
        self.append(events)  # a hidden tail keeps up too: O(new rows), nothing to fetch on return

    async def load(self) -> None:
        """The last events on first show; afterwards only what came after the last one shown."""
        try:
            if self.events:
                page = await self.client.call(
                    r.ListEvents, ListEventsRequest(after=self.events[-1].seq, limit=PAGE)
                )
                if len(page.events) < PAGE:
                    self.append(page.events)
                    return
            self.events = (
                await self.client.call(r.ListEvents, ListEventsRequest(last=200, limit=200))
            ).events
        except Exception as e:
            self.failed(e, "loading events")
            return
        self.render_rows()

    def append(self, events: list[Event]) -> None:
        # by identity, not by seq order: on Postgres the log's order is not seq order (agen.store.event_log)
        seen = {e.seq for e in self.events[-len(events) - PAGE :]}
        fresh = [e for e in events if e.seq not in seen]
        if not fresh:
            return
        table = self.query_one(FastTable)
        tailing = table.row_count == 0 or table.cursor_row >= table.row_count - 1
        self.events += fresh
        text = self.query_one(Input).value
        for e in fresh:
            if matches(e, text):
                self._row(table, e)
        over = len(self.events) - KEEP
        if over > 0:
            table.remove_rows(str(e.seq) for e in self.events[:over])
            self.events = self.events[over:]
        if tailing and table.row_count:
            table.move_cursor(row=table.row_count - 1)
        self.loads += 1

    def render_rows(self) -> None:
        text = self.query_one(Input).value
        table = self.query_one(FastTable)
        table.clear()
        for e in self.events:
            if matches(e, text):
                self._row(table, e)
        if table.row_count:
            table.move_cursor(row=table.row_count - 1)

    @staticmethod
    def _row(table: FastTable, e: Event) -> None:
        data = json.dumps(e.data, ensure_ascii=False, sort_keys=True)
        table.add_row(
            str(e.seq),
            fmt.age(e.created_ms),
            e.type,
            e.severity,
            e.deployment or "-",
            fmt.short_id(e.task_id),
            data[:70],
            key=str(e.seq),
        )
