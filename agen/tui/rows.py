"""Keyed table rows applied as differences: a refresh touches only the rows and cells that changed.

Clearing a table and adding every row again re-measures every cell and redraws everything; with a
thousand deployments that is most of a refresh. Rows here are kept by key in table order, and a
new list becomes cell updates, one bulk removal, appends and, when rows moved (a new task lands on
top), one reorder: unchanged rows are neither re-measured nor re-rendered (FastTable caches cells
by content).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.coordinate import Coordinate
from textual.widgets.data_table import ColumnKey

from agen.tui.widgets.table import FastTable

Cells = tuple[Any, ...]
Column = str | tuple[str, int]
"""A column's label, or (label, the narrowest screen width that still shows it)."""


class KeyedRows:
    """The rows a FastTable shows, by key and in table order.

    On a narrow screen the columns given a minimum width above it are left out (the least needed
    first, as each screen orders them), rather than pushed off the right edge; rows keep every cell,
    so widening the screen brings them back.
    """

    def __init__(self, table: FastTable, columns: Sequence[Column]) -> None:
        self.table = table
        self.rows: dict[str, Cells] = {}
        self.specs = [(c, 0) if isinstance(c, str) else c for c in columns]
        self.shown = list(range(len(self.specs)))
        """Indexes of the columns on screen."""
        self.width: int | None = None
        self.columns: list[ColumnKey] = [
            table.add_column(label, key=label) for label, _ in self.specs
        ]

    def visible(self, cells: Cells) -> Cells:
        """The cells of the columns on screen (what free-text filters match against)."""
        if len(self.shown) == len(self.specs):
            return cells
        return tuple(cells[i] for i in self.shown)

    def fit(self, width: int) -> None:
        """Show the columns that fit a screen this wide (rebuilding the table only when that changes)."""
        self.width = width
        shown = [i for i, (_, least) in enumerate(self.specs) if least <= width]
        if shown == self.shown:
            return
        table = self.table
        keep_key = self.cursor_key()
        self.shown = shown
        table.clear(columns=True)
        self.columns = [table.add_column(self.specs[i][0], key=self.specs[i][0]) for i in shown]
        for key, cells in self.rows.items():
            table.add_row(*self.visible(cells), key=key)
        if keep_key is not None:
            table.move_cursor(row=table.get_row_index(keep_key))

    def __len__(self) -> int:
        return len(self.rows)

    def keys(self) -> list[str]:
        return list(self.rows)

    def cursor_key(self) -> str | None:
        row = self.table.cursor_row
        if not self.rows or not 0 <= row < len(self.rows):
            return None
        key = self.table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value
        return key if key in self.rows else None

    def apply(self, rows: Sequence[tuple[str, Cells]]) -> int:
        """Make the table show ``rows`` (key, cells) in this order; returns how many rows changed.

        The cursor stays on the row it was on (by key), or at the same position if that row went.
        """
        table = self.table
        if self.width is None:
            self.fit(table.app.size.width)
        new = dict(rows)
        keep_key, keep_row = self.cursor_key(), table.cursor_row
        gone = [k for k in self.rows if k not in new]
        changed = len(gone)
        if gone:
            table.remove_rows(gone)
            for key in gone:
                del self.rows[key]
        for key, cells in new.items():
            before = self.rows.get(key)
            if before is None:
                table.add_row(*self.visible(cells), key=key)
            elif cells != before:
                pairs = zip(self.visible(before), self.visible(cells), strict=True)
                for column, (old, value) in zip(self.columns, pairs, strict=True):
                    if old != value:
                        table.update_cell(key, column, value, update_width=True)
            else:
                continue
            self.rows[key] = cells
            changed += 1
        order = list(new)
        if list(self.rows) != order:  # new rows were appended, or rows moved
            table.reorder(order)
            self.rows = {key: self.rows[key] for key in order}
        if self.rows:
            row = (
                table.get_row_index(keep_key)
                if keep_key in self.rows
                else min(max(keep_row, 0), len(self.rows) - 1)
            )
            if row != table.cursor_row:
                table.move_cursor(row=row)
        return changed
