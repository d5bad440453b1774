"""FastTable: agen's keyed, row-cursor table, drawn through Textual's public Line API.

It looks and handles like Textual's DataTable with ``cursor_type="row"`` (same CSS, component
classes, keys, mouse hover and clicks, messages; tests/tui/test_table.py holds it to DataTable's
segments), and is its own ScrollView because what agen's screens need from a table, DataTable gives
only through its internals, which any Textual release may change:

- A refresh renders only what changed. DataTable keys its render caches by a table-wide update
  counter, so one changed cell, or a row added or removed, renders every visible cell again (about
  0.2 ms each through Rich: most of a frame at 50 rows by 7 columns). Here a cell's rendering is
  cached by what it shows (value, width, cursor, hover, focus) and the row's style (zebra stripe,
  which flips when rows shift by one) and position (the meta mouse clicks read) go on afterwards.
- Rows are removed and reordered in bulk, in one pass (DataTable renumbers every row per removal and
  has no reorder but a sort on cell values).
- Column widths follow the values as they arrive, not on the next idle: a frame drawn first would
  cut every value at the header's width.

Rows are one line high; there are no row labels, fixed rows or columns, and the header is always
shown: agen's screens use none of these.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, NamedTuple, cast

from rich.console import RenderableType
from rich.padding import Padding
from rich.protocol import is_renderable
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.coordinate import Coordinate
from textual.geometry import Region, Size, Spacing, clamp
from textual.message import Message
from textual.reactive import Reactive
from textual.render import measure
from textual.renderables.styled import Styled
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets.data_table import (
    CellDoesNotExist,
    CellKey,
    ColumnKey,
    DuplicateKey,
    RowDoesNotExist,
    RowKey,
)

HEADER = 1
"""Lines of the header (always shown; it stays put when the rows scroll)."""
PAD = 1
"""Blank cells on each side of a cell's value."""
EMPTY = Text(no_wrap=True, end="")
CACHED_CELLS = 20_000
"""Rendered cells kept (a 1,000-row table with 7 columns fits, with room for the cursor's variants)."""

Lines = list[list[Segment]]


def _value_key(value: object) -> object:
    """Plain values are keys by value; anything else (a rich Text) by identity, checked on a hit."""
    return (
        (type(value), value) if value is None or isinstance(value, (str, int, float)) else id(value)
    )


def formatted(value: object) -> RenderableType:
    """What a cell shows for a value, as DataTable formats it on a one-line row: a str is markup, a
    float has two decimals, a renderable is itself, anything else its str(); only the first line."""
    if value is None:
        return EMPTY
    if isinstance(value, str):
        content = value
    elif isinstance(value, float):
        content = f"{value:.2f}"
    elif is_renderable(value):
        return cast(RenderableType, value) or EMPTY
    else:
        content = str(value)
    newline = content.find("\n")
    if newline not in (-1, len(content) - 1):
        content = content[:newline]
    text = Text.from_markup(content, end="") if isinstance(value, str) else Text(content, end="")
    text.no_wrap = True
    return text or EMPTY


@dataclass
class Column:
    """A column: its key, header label and the width of its widest value (or label) so far."""

    key: ColumnKey
    label: Text
    content_width: int

    @property
    def width(self) -> int:
        """Cells on screen, padding included."""
        return self.content_width + 2 * PAD


class _Look(NamedTuple):
    """The styles one render pass draws with (read once per pass: each read costs a lookup)."""

    base: Style
    header: Style
    even: Style
    odd: Style
    focus: bool


class FastTable(ScrollView, can_focus=True):
    """A table of keyed rows with a row cursor, rendering again only the cells that changed."""

    ALLOW_SELECT = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("pageup", "cursor_page_up", "Page up", show=False),
        Binding("pagedown", "cursor_page_down", "Page down", show=False),
        Binding("ctrl+home", "cursor_first", "Top", show=False),
        Binding("ctrl+end", "cursor_last", "Bottom", show=False),
        Binding("home", "scroll_left_edge", "Home", show=False),
        Binding("end", "scroll_right_edge", "End", show=False),
    ]
    """DataTable's keys: up/down move the cursor a row, pageup/pagedown a page, ctrl+home/ctrl+end
    to the first/last row, left/right/home/end scroll sideways, enter selects the row."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "datatable--cursor",
        "datatable--hover",
        "datatable--header",
        "datatable--header-cursor",
        "datatable--header-hover",
        "datatable--odd-row",
        "datatable--even-row",
    }
    """DataTable's component classes (the ones a row-cursor table without fixed cells draws), so
    themes and CSS written for DataTable's look apply as they are."""

    DEFAULT_CSS = """
    FastTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;

        &:focus {
            background-tint: $foreground 5%;
            & > .datatable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .datatable--header {
                background-tint: $foreground 5%;
            }
        }
        &:dark {
            & > .datatable--even-row {
                background: $surface-darken-1 40%;
            }
        }
        & > .datatable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .datatable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .datatable--even-row {
            background: $surface-lighten-1 50%;
        }
        & > .datatable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .datatable--header-cursor {
            background: $accent-darken-1;
            color: $foreground;
        }
        & > .datatable--header-hover {
            background: $accent 30%;
        }
        & > .datatable--hover {
            background: $block-hover-background;
        }
    }
    """
    """DataTable's CSS for what FastTable draws (Textual 8)."""

    cursor_row: Reactive[int] = Reactive(0, repaint=False, always_update=True)
    """The row under the cursor (kept within the rows; 0 when there are none)."""

    class RowHighlighted(Message):
        """The cursor is on a row: it moved there, or the first row arrived under it."""

        def __init__(self, table: FastTable, cursor_row: int, row_key: RowKey) -> None:
            self.table = table
            self.cursor_row = cursor_row
            self.row_key = row_key
            super().__init__()

        @property
        def control(self) -> FastTable:
            return self.table

    class RowSelected(Message):
        """Enter on a row, or a click on the row the cursor is on."""

        def __init__(self, table: FastTable, cursor_row: int, row_key: RowKey) -> None:
            self.table = table
            self.cursor_row = cursor_row
            self.row_key = row_key
            super().__init__()

        @property
        def control(self) -> FastTable:
            return self.table

    def __init__(
        self,
        *,
        cursor_type: Literal["row"] = "row",
        zebra_stripes: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        """``cursor_type`` is DataTable's spelling of the one cursor this table has: a row's."""
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.cursor_type = cursor_type
        self.zebra_stripes = zebra_stripes
        """Even and odd rows drawn in their own styles (datatable--even-row, datatable--odd-row)."""
        self.columns: dict[ColumnKey, Column] = {}
        """The columns by key, in table order."""
        self._order: list[RowKey] = []
        self._index: dict[RowKey, int] = {}
        self._cells: dict[RowKey, list[object]] = {}
        """Each row's values, in column order."""
        self._table_width = 0
        self._layout_pending = False
        """The virtual size changed and the next refresh lays the table out again: scroll after it."""
        self.hover_row = 0
        """The row under the mouse (-1: the header), highlighted while ``_show_hover``."""
        self._show_hover = False
        """The mouse, not the keys, moved last: the row under it is highlighted."""
        self._look: _Look | None = None
        self._rendered: LRUCache[tuple[object, ...], tuple[object, Lines]] = LRUCache(CACHED_CELLS)
        self._widths: LRUCache[object, tuple[object, int]] = LRUCache(CACHED_CELLS)
        self._metas: LRUCache[tuple[int, int], Style] = LRUCache(CACHED_CELLS)
        self._components: dict[tuple[bool, bool, bool, bool], tuple[Style, Style]] = {}

    # -- reading ----------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._order)

    def get_row_index(self, row_key: RowKey | str) -> int:
        index = self._index.get(RowKey(row_key) if isinstance(row_key, str) else row_key)
        if index is None:
            raise RowDoesNotExist(f"No row exists for row_key={row_key!r}")
        return index

    def get_row_at(self, row_index: int) -> list[object]:
        """The values of the row shown at this index, in column order."""
        if not 0 <= row_index < len(self._order):
            raise RowDoesNotExist(f"Row index {row_index!r} is not valid.")
        return list(self._cells[self._order[row_index]])

    def get_cell(self, row_key: RowKey | str, column_key: ColumnKey | str) -> object:
        cells = self._cells.get(RowKey(row_key) if isinstance(row_key, str) else row_key)
        column = self._column_index(column_key)
        if cells is None or column is None:
            raise CellDoesNotExist(
                f"No cell exists for row_key={row_key!r}, column_key={column_key!r}."
            )
        return cells[column]

    def coordinate_to_cell_key(self, coordinate: Coordinate) -> CellKey:
        """The keys of the cell shown at this (row, column)."""
        row, column = coordinate
        if not (0 <= row < len(self._order) and 0 <= column < len(self.columns)):
            raise CellDoesNotExist(f"No cell exists at {coordinate!r}.")
        return CellKey(self._order[row], list(self.columns)[column])

    def _column_index(self, column_key: ColumnKey | str) -> int | None:
        for n, key in enumerate(self.columns):
            if key == column_key:
                return n
        return None

    # -- changing ---------------------------------------------------------------------------------

    def add_column(self, label: str | Text, *, key: str | None = None) -> ColumnKey:
        """A column at the right, as wide as its label until a value is wider (rows already shown
        get an empty cell in it)."""
        column_key = ColumnKey(key)
        if column_key in self.columns:
            raise DuplicateKey(f"The column key {key!r} already exists.")
        text = Text.from_markup(label) if isinstance(label, str) else label
        self.columns[column_key] = Column(column_key, text, measure(self.app.console, text, 1))
        for cells in self._cells.values():
            cells.append(None)
        self._widened()
        return column_key

    def add_columns(self, *labels: str | Text) -> list[ColumnKey]:
        return [self.add_column(label) for label in labels]

    def add_row(self, *cells: object, key: str | None = None) -> RowKey:
        """A row at the bottom; its values widen their columns as needed."""
        row_key = RowKey(key)
        if row_key in self._index:
            raise DuplicateKey(f"The row key {row_key!r} already exists.")
        if len(cells) > len(self.columns):
            raise ValueError("More values provided than there are columns.")
        values = [*cells, *[None] * (len(self.columns) - len(cells))]
        self._index[row_key] = len(self._order)
        self._order.append(row_key)
        self._cells[row_key] = values
        if any(
            [
                self._fit(column, value)
                for column, value in zip(self.columns.values(), values, strict=True)
            ]
        ):
            self._widened()
        else:
            self._resized()
            self._refresh_row(len(self._order) - 1)
        self.cursor_row = self.cursor_row
        if len(self._order) == 1 and self.columns:
            self._highlight_row(self.cursor_row)  # a cursor appears where there was none
        return row_key

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: object,
        *,
        update_width: bool = False,
    ) -> None:
        """Show ``value`` in this cell; ``update_width`` widens the column if it is wider (a narrower
        value leaves the column as it is, as removing a row does)."""
        row_key = RowKey(row_key) if isinstance(row_key, str) else row_key
        cells, column = self._cells.get(row_key), self._column_index(column_key)
        if cells is None or column is None:
            raise CellDoesNotExist(
                f"No cell exists for row_key={row_key!r}, column_key={column_key!r}."
            )
        cells[column] = value
        if update_width and self._fit(list(self.columns.values())[column], value):
            self._widened()
        else:
            self._refresh_row(self._index[row_key])

    def remove_rows(self, keys: Iterable[str]) -> None:
        """Remove these rows, in one pass (columns keep their widths)."""
        gone = {RowKey(k) for k in keys if k in self._index}
        if not gone:
            return
        for row_key in gone:
            del self._cells[row_key]
        self._set_order([k for k in self._order if k not in gone])

    def reorder(self, keys: Sequence[str]) -> None:
        """Show the rows in this order (every row's key, once)."""
        order = [RowKey(k) for k in keys]
        if len(order) != len(self._order) or set(order) != set(self._index):
            raise ValueError("reorder needs every row's key, once")
        self._set_order(order)

    def clear(self, columns: bool = False) -> FastTable:
        """Remove every row (and with ``columns``, every column); the cursor and scroll go home."""
        self._order, self._index, self._cells = [], {}, {}
        if columns:
            self.columns = {}
        self.cursor_row = 0
        self.hover_row = 0
        self._widened()
        self.scroll_to(0, 0, animate=False, immediate=True)
        return self

    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        """Put the cursor on this row (kept within the rows), scrolled into view unless ``scroll``
        is False."""
        self.cursor_row = row
        if scroll:
            self._scroll_to_cursor(animate=animate)

    def _set_order(self, order: list[RowKey]) -> None:
        self._order = order
        self._index = {k: n for n, k in enumerate(order)}
        self.cursor_row = self.cursor_row
        self._resized()
        self.refresh()

    def _fit(self, column: Column, value: object) -> bool:
        """Widen the column to the value's width; True if it grew."""
        key = _value_key(value)
        hit = self._widths.get(key)
        if hit is None or (hit[0] is not value and not isinstance(key, tuple)):
            hit = value, measure(self.app.console, formatted(value), 1)
            self._widths[key] = hit
        if hit[1] <= column.content_width:
            return False
        column.content_width = hit[1]
        return True

    def _widened(self) -> None:
        """The columns changed: every line moves."""
        self._table_width = sum(column.width for column in self.columns.values())
        self._resized()
        self.refresh()

    def _resized(self) -> None:
        size = Size(self._table_width, len(self._order) + HEADER)
        if size == self.virtual_size:
            return
        self.virtual_size = size
        if not self._layout_pending:
            self._layout_pending = True
            self.call_after_refresh(self._laid_out)

    def _laid_out(self) -> None:
        self._layout_pending = False

    # -- cursor and scrolling ---------------------------------------------------------------------

    def validate_cursor_row(self, row: int) -> int:
        return clamp(row, 0, len(self._order) - 1)

    def watch_cursor_row(self, old: int, new: int) -> None:
        if old != new:
            self._refresh_row(old)
            self._highlight_row(new)
            self._scroll_to_cursor()

    def _highlight_row(self, row: int) -> None:
        self._refresh_row(row)
        if 0 <= row < len(self._order):
            self.post_message(FastTable.RowHighlighted(self, row, self._order[row]))

    def _scroll_to_cursor(self, animate: bool = False) -> None:
        """Scroll the cursor's row into view (once the table is laid out, if rows just came)."""
        if self._layout_pending:
            self.call_after_refresh(self._scroll_cursor_into_view, animate)
        else:
            self._scroll_cursor_into_view(animate)

    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        row = self.cursor_row
        if 0 <= row < len(self._order):
            width = max(self.size.width, self._table_width)
            region = Region(int(self.scroll_x), row + HEADER, width, 1)
        else:
            region = Region(int(self.scroll_x), 0, 0, 0)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(HEADER, 0, 0, 0), force=True)

    def _refresh_row(self, row: int) -> None:
        """Draw this row (-1: the header) again, if it is on screen."""
        y = 0 if row < 0 else row + HEADER - int(self.scroll_y)
        if (row < 0 or y >= HEADER) and y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _set_hover_cursor(self, active: bool) -> None:
        self._show_hover = active
        self._refresh_row(self.hover_row)

    def action_select_cursor(self) -> None:
        self._set_hover_cursor(False)
        self._post_selected()

    def action_cursor_up(self) -> None:
        self._set_hover_cursor(False)
        self.cursor_row -= 1

    def action_cursor_down(self) -> None:
        self._set_hover_cursor(False)
        self.cursor_row += 1

    def action_cursor_page_down(self) -> None:
        self._set_hover_cursor(False)
        height = self.scrollable_content_region.height - HEADER
        row = self.cursor_row
        rows = max(0, min(len(self._order) - row, height + 1))
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=row + rows - 1, scroll=False)

    def action_cursor_page_up(self) -> None:
        self._set_hover_cursor(False)
        height = self.scrollable_content_region.height - HEADER
        row = self.cursor_row
        rows = max(0, min(row + 1, height + 1))
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=row - rows + 1, scroll=False)

    def action_cursor_first(self) -> None:
        self._set_hover_cursor(False)
        self.cursor_row = 0

    def action_cursor_last(self) -> None:
        self._set_hover_cursor(False)
        self.cursor_row = len(self._order) - 1

    def action_scroll_left_edge(self) -> None:
        self._set_hover_cursor(False)
        self.scroll_x = 0

    def action_scroll_right_edge(self) -> None:
        self._set_hover_cursor(False)
        self.scroll_x = self.max_scroll_x

    def _post_selected(self) -> None:
        if self._order:
            row = self.cursor_row
            self.post_message(FastTable.RowSelected(self, row, self._order[row]))

    def on_mouse_move(self, event: events.MouseMove) -> None:
        """The row under the mouse is highlighted (the segments say which: their meta)."""
        meta = event.style.meta
        if "row" not in meta:
            self._set_hover_cursor(False)
            return
        old, self.hover_row = self.hover_row, meta["row"]
        self._refresh_row(old)
        self._set_hover_cursor(True)

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover_cursor(False)

    def on_click(self, event: events.Click) -> None:
        """A click puts the cursor on a row; a click on the cursor's row selects it."""
        self._set_hover_cursor(True)
        row = event.style.meta.get("row")
        if not isinstance(row, int) or row < 0:
            return  # the header, or outside the rows
        again = row == self.cursor_row
        self.cursor_row = row
        if again:
            self._post_selected()
        self._scroll_to_cursor(animate=True)
        event.stop()

    # -- drawing ----------------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._rendered.clear()
        self._components.clear()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self.refresh()  # the space right of the last column follows the table's width

    def render_lines(self, crop: Region) -> list[Strip]:
        self._look = self._make_look()
        try:
            return super().render_lines(crop)
        finally:
            self._look = None

    def _make_look(self) -> _Look:
        styles = self.get_component_styles
        return _Look(
            self.rich_style,
            styles("datatable--header").rich_style,
            styles("datatable--even-row").rich_style,
            styles("datatable--odd-row").rich_style,
            self.has_focus,
        )

    def render_line(self, y: int) -> Strip:
        look = self._look or self._make_look()
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        row = y - HEADER if y < HEADER else y - HEADER + scroll_y
        if row >= len(self._order):
            return Strip.blank(width, look.base)
        strip = Strip(self._row_segments(row, look)).crop(scroll_x, scroll_x + width)
        return strip.adjust_cell_length(width, look.base).simplify()

    def _row_segments(self, row: int, look: _Look) -> list[Segment]:
        """A row's line (-1: the header's), from each cell's cached rendering plus the row's style
        and each cell's position; then the rest of the widget's width in the row's style."""
        header = row < 0
        cursor = row == self.cursor_row
        hover = self._show_hover and row == self.hover_row
        if header:
            style = look.header
            values: Sequence[object] = [column.label for column in self.columns.values()]
        else:
            style = (look.odd if row % 2 else look.even) if self.zebra_stripes else look.base
            values = self._cells[self._order[row]]
        segments: list[Segment] = []
        for n, (column, value) in enumerate(zip(self.columns.values(), values, strict=True)):
            meta = self._metas.get((row, n))
            if meta is None:
                meta = self._metas[row, n] = Style.from_meta({"row": row, "column": n})
            segments += [
                Segment(text, style + part + meta if part else style + meta, control)
                for text, part, control in self._cell(
                    value, column.width, header, hover, cursor, look
                )[0]
            ]
        rest, _ = self._styles(header, hover, cursor, look.focus)
        rest_meta = Style.from_meta({"row": row, "column": 0, "out_of_bounds": True})
        segments.append(
            Segment(" " * max(0, self.size.width - self._table_width), style + rest + rest_meta)
        )
        return segments

    def _cell(
        self, value: object, width: int, header: bool, hover: bool, cursor: bool, look: _Look
    ) -> Lines:
        key = (header, _value_key(value), width, hover, cursor, look.focus)
        hit = self._rendered.get(key)
        if hit is None or (hit[0] is not value and not isinstance(key[1], tuple)):
            hit = value, self._render_cell(value, width, header, hover, cursor, look.focus)
            self._rendered[key] = hit
        return hit[1]

    def _render_cell(
        self, value: object, width: int, header: bool, hover: bool, cursor: bool, focus: bool
    ) -> Lines:
        """A cell drawn with the cursor's and hover's styles, without the row's style and position
        (added per line: the same rendering serves every row that shows this value)."""
        component, post = self._styles(header, hover, cursor, focus)
        options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
        return self.app.console.render_lines(
            Styled(Padding(formatted(value), (0, PAD)), pre_style=component, post_style=post),
            options,
        )

    def _styles(self, header: bool, hover: bool, cursor: bool, focus: bool) -> tuple[Style, Style]:
        """The hover and cursor component styles over a cell, and the cursor's colour put back over
        a value's own (a coloured status still shows the cursor's foreground)."""
        key = (header, hover, cursor, focus)
        found = self._components.get(key)
        if found is None:
            component = Style()
            get = self.get_component_rich_style
            if hover:
                component += get("datatable--hover")
                if header:
                    component += get("datatable--header-hover")
            if cursor:
                component += get("datatable--cursor")
                if header:
                    component += get("datatable--header-cursor")
            found = self._components[key] = (
                component,
                Style.from_color(color=component.color) + Style.null(),
            )
        return found
