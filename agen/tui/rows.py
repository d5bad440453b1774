"""Keyed DataTable rows applied as differences: a refresh touches only the rows and cells that changed.

Clearing a table and adding every row again re-measures every cell and redraws everything; with a
thousand deployments that is most of a refresh. Rows here are kept by key in table order, and a
new list becomes cell updates, removals and appends. Only when rows move (a new row lands in the
middle) or most rows went is the table rebuilt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

Cells = tuple[Any, ...]

REBUILD_AT = 64
"""Removing more rows than this one by one costs more than a rebuild (each removal is O(rows))."""


class KeyedRows:
    """The rows a DataTable shows, by key and in table order."""

    def __init__(self, table: DataTable[Any], columns: Sequence[str]) -> None:
        self.table = table
        self.rows: dict[str, Cells] = {}
        self.columns: list[ColumnKey] = [table.add_column(label, key=label) for label in columns]
        self.rebuilds = 0

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
        new = dict(rows)
        keep_key, keep_row = self.cursor_key(), table.cursor_row
        kept = [k for k in self.rows if k in new]
        gone = len(self.rows) - len(kept)
        order = list(new)
        if gone > REBUILD_AT or order[: len(kept)] != kept:
            changed = self._rebuild(new)
        else:
            changed = gone
            for key in [k for k in self.rows if k not in new]:
                table.remove_row(key)
                del self.rows[key]
            for key in kept:
                cells, before = new[key], self.rows[key]
                if cells == before:
                    continue
                for column, old, value in zip(self.columns, before, cells, strict=True):
                    if old != value:
                        table.update_cell(key, column, value, update_width=True)
                self.rows[key] = cells
                changed += 1
            for key in order[len(kept):]:
                table.add_row(*new[key], key=key)
                self.rows[key] = new[key]
                changed += 1
        if self.rows:
            row = table.get_row_index(keep_key) if keep_key in self.rows else min(max(keep_row, 0), len(self.rows) - 1)
            if row != table.cursor_row:
                table.move_cursor(row=row)
        return changed

    def _rebuild(self, new: dict[str, Cells]) -> int:
        self.rebuilds += 1
        self.table.clear()
        for key, cells in new.items():
            self.table.add_row(*cells, key=key)
        self.rows = dict(new)
        return len(new)
