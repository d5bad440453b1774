"""A DataTable whose rendered cells outlive changes to other rows, and whose rows move without a rebuild.

Textual's DataTable keys every render cache by a table-wide update counter, so changing one cell,
adding or removing a row re-renders every visible cell (about 0.2 ms each through Rich: most of a
frame at 50 rows by 7 columns). Here a cell's rendering is cached by what it shows (its value, width,
cursor and focus), so a refresh renders only the cells that changed; the row's style (zebra stripe,
which flips when rows shift by one) and the row/column position Textual puts in the segments' meta
(for mouse clicks) are added afterwards. Rows can be reordered and removed in bulk
in one pass, where DataTable offers only a full clear (which re-measures every cell) or a removal
that renumbers all rows each time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._two_way_dict import TwoWayDict
from textual._types import SegmentLines
from textual.cache import LRUCache
from textual.geometry import Region
from textual.render import measure
from textual.renderables.styled import Styled
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import CellKey, RowKey

EMPTY = Text(no_wrap=True, end="")
CACHED_CELLS = 20_000
"""Rendered cells kept (a 1,000-row table with 7 columns fits, with room for the cursor's variants)."""


def _value_key(value: object) -> object:
    """Plain values are keys by value; anything else (a rich Text) by identity, checked on a hit."""
    return (
        (type(value), value) if value is None or isinstance(value, (str, int, float)) else id(value)
    )


class FastTable(DataTable[Any]):
    """DataTable with per-cell render caching by content, bulk removal and reordering.

    The content cache is keyed by everything a rendering depends on (value, width, cursor,
    hover, focus, padding), so it survives clear() and setting changes; only a style change drops it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._rendered: LRUCache[tuple[object, ...], tuple[object, SegmentLines]] = LRUCache(
            CACHED_CELLS
        )
        self._metas: LRUCache[tuple[int, int], Style] = LRUCache(CACHED_CELLS)
        self._settings: tuple[int, int, bool, bool, int] | None = None
        """Reactive settings a cell's rendering depends on, read once per render_lines (reads cost ~1 µs)."""

    def render_lines(self, crop: Region) -> list[Strip]:
        self._settings = (
            self.fixed_rows,
            self.fixed_columns,
            self._show_hover_cursor,
            self.show_cursor,
            self.cell_padding,
        )
        return super().render_lines(crop)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._rendered.clear()

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> SegmentLines:
        settings = self._settings or (
            self.fixed_rows,
            self.fixed_columns,
            self._show_hover_cursor,
            self.show_cursor,
            self.cell_padding,
        )
        if row_index < settings[0] or column_index < settings[1]:  # header, labels, fixed cells
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        row = self.rows.get(row_key) if row_key is not None else None
        if row is None or column_key is None or (row.auto_height and row.height == 0):
            # not a body cell, or a height not measured yet (DataTable's own pass measures it)
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        value = self._data[row.key].get(column_key)
        key = (
            _value_key(value),
            column_index,
            width,
            cursor,
            hover,
            row.height,
            self._pseudo_class_state,
            settings,
        )
        hit = self._rendered.get(key)
        if hit is None or (hit[0] is not value and not isinstance(key[0], tuple)):
            hit = value, self._render_value(value, row.height, width, cursor, hover)
            self._rendered[key] = hit
        meta = self._metas.get((row_index, column_index))
        if meta is None:
            meta = self._metas[row_index, column_index] = Style.from_meta(
                {"row": row_index, "column": column_index}
            )
        # DataTable draws with pre_style = row style + position meta + cursor style; styles combine left to
        # right, so the row's style (zebra stripe) and the meta go first here, onto the cached segments
        return [
            [
                Segment(text, base_style + style + meta if style else base_style + meta, control)
                for text, style, control in line
            ]
            for line in hit[1]
        ]

    def _render_value(
        self, value: object, height: int, width: int, cursor: bool, hover: bool
    ) -> SegmentLines:
        """What DataTable._render_cell draws for a body cell, without the row's style and position meta."""
        from textual.widgets._data_table import default_cell_formatter

        cell = (
            EMPTY
            if value is None
            else default_cell_formatter(value, wrap=height != 1, height=height) or EMPTY
        )
        component_style, post_style = self._get_styles_to_render_cell(
            False,
            False,
            False,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        options = self.app.console_options.update_dimensions(width, height)
        if height == 1:
            options = options.update(no_wrap=True)
        return self.app.console.render_lines(
            Styled(
                Padding(cell, (0, self.cell_padding)),
                pre_style=component_style,
                post_style=post_style,
            ),
            options,
        )

    def _update_column_widths(self, updated_cells: set[CellKey]) -> None:
        """A changed cell widens its column when wider; a narrower one leaves the column as it is, as
        DataTable's clear() and remove_row() do (its re-measuring every cell of the column on each
        narrower value is a full-column pass per changed cell)."""
        console = self.app.console
        from textual.widgets._data_table import default_cell_formatter

        for row_key, column_key in updated_cells:
            column, row = self.columns.get(column_key), self.rows.get(row_key)
            if column is None or row is None:
                continue
            cell = default_cell_formatter(
                self._data[row_key][column_key], wrap=row.height != 1, height=row.height
            )
            column.content_width = max(column.content_width, measure(console, cell, 1))
        self._require_update_dimensions = True

    def measure_pending(self) -> None:
        """Size the columns for the rows added and cells changed so far now, rather than on the next
        idle: DataTable measures on idle, and a frame drawn before it (or a table shown only after its
        rows arrived) has header-wide columns that cut every value."""
        if self._updated_cells:
            updated = self._updated_cells.copy()
            self._updated_cells.clear()
            self._update_column_widths(updated)
        if self._require_update_dimensions:
            self._require_update_dimensions = False
            new_rows = self._new_rows.copy()
            self._new_rows.clear()
            self._update_dimensions(new_rows)

    def remove_rows(self, keys: Iterable[str]) -> None:
        """Remove these rows in one pass (remove_row renumbers every row for each one)."""
        gone = {RowKey(k) for k in keys if k in self.rows}
        if not gone:
            return
        for row_key in gone:
            for column_key in self._data[row_key]:
                self._updated_cells.discard(CellKey(row_key, column_key))
            del self.rows[row_key]
            del self._data[row_key]
        locations = self._row_locations
        kept = sorted((k for k in locations if k not in gone), key=lambda k: locations.get(k) or 0)
        self._row_locations = TwoWayDict({k: n for n, k in enumerate(kept)})
        self._changed(layout=True)

    def reorder(self, keys: Sequence[str]) -> None:
        """Show the rows in this order (every row's key, once); like sort(), without re-measuring."""
        by_value = {k.value: k for k in self.rows}
        self._row_locations = TwoWayDict({by_value[k]: n for n, k in enumerate(keys)})
        self._changed(layout=False)

    def _changed(self, *, layout: bool) -> None:
        self._require_update_dimensions = True
        self.check_idle()
        self.cursor_coordinate = self.cursor_coordinate
        self.hover_coordinate = self.hover_coordinate
        self._update_count += 1
        self.refresh(layout=layout)
