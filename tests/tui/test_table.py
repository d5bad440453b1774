"""FastTable and KeyedRows: the same pixels as Textual's DataTable, only changed cells rendered again,
DataTable's keys and clicks."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from agen.tui.rows import KeyedRows
from agen.tui.widgets.table import FastTable

ROWS = [
    (
        f"k{i}",
        (f"row {i}", Text(f"[{i}]", style="red" if i % 3 else ""), "x" * (i % 7), None, 1.5 * i),
    )
    for i in range(30)
]
COLUMNS = ("NAME", "TEXT", "PAD", "NONE", "FLOAT")


class Tables(App[None]):
    AUTO_FOCUS = None  # neither table focused: both draw the same cursor

    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[str | None] = []
        self.selected: list[str | None] = []

    def compose(self) -> ComposeResult:
        yield DataTable(id="plain", cursor_type="row", zebra_stripes=True)
        yield FastTable(id="fast", cursor_type="row", zebra_stripes=True)

    @on(FastTable.RowHighlighted)
    def _highlighted(self, event: FastTable.RowHighlighted) -> None:
        self.highlighted.append(event.row_key.value)

    @on(FastTable.RowSelected)
    def _selected(self, event: FastTable.RowSelected) -> None:
        self.selected.append(event.row_key.value)


def lines(table: DataTable[Any] | FastTable) -> list[list[tuple[str, Any]]]:
    """Every visible line as (text, style) segments, meta included (mouse clicks read row/column from it)."""
    return [
        [(seg.text, seg.style) for seg in table.render_line(y)] for y in range(table.size.height)
    ]


async def test_fast_table_draws_exactly_what_datatable_draws_through_updates_removals_and_moves() -> (
    None
):
    app = Tables()
    async with app.run_test(size=(100, 40)) as pilot:
        plain, fast = app.query_one("#plain", DataTable), app.query_one("#fast", FastTable)
        plain.styles.height = fast.styles.height = 18
        plain.add_columns(*COLUMNS)  # the reference: DataTable filled by its own calls
        for key, cells in ROWS:
            plain.add_row(*cells, key=key)
        rows = KeyedRows(fast, COLUMNS)
        rows.apply(ROWS)
        await pilot.pause()
        assert lines(fast) == lines(plain)

        changed = [(k, ("changed", *c[1:])) if k == "k3" else (k, c) for k, c in ROWS if k != "k5"]
        moved = [changed[-1], *changed[:-1]]  # the last row on top, as a new task lands
        rows.apply(moved)
        plain.clear()
        for key, cells in moved:
            plain.add_row(*cells, key=key)
        fast.move_cursor(row=4)
        plain.move_cursor(row=4)
        await pilot.pause()
        order = [fast.coordinate_to_cell_key(Coordinate(n, 0)).row_key.value for n in range(29)]
        assert rows.keys() == [k for k, _ in moved] == order
        assert lines(fast) == lines(plain)

        drawn = []
        for table in (plain, fast):  # scrolled down to a row below the fold, and focused
            table.move_cursor(row=25)
            table.focus()
            await pilot.pause()
            drawn.append(lines(table))
        assert fast.scroll_offset == plain.scroll_offset != (0, 0)
        assert drawn[0] == drawn[1]


async def test_a_table_wider_than_the_screen_scrolls_sideways_as_datatable_does() -> None:
    app = Tables()
    async with app.run_test(size=(30, 40)) as pilot:
        plain, fast = app.query_one("#plain", DataTable), app.query_one("#fast", FastTable)
        plain.styles.height = fast.styles.height = 12
        plain.add_columns(*COLUMNS)
        for key, cells in ROWS:
            plain.add_row(*cells, key=key)
        KeyedRows(fast, COLUMNS).apply(ROWS)
        await pilot.pause()
        assert lines(fast) == lines(plain)
        drawn = []
        for table in (plain, fast):
            table.focus()
            await pilot.press("right", "right", "down", "end")
            await pilot.pause()
            drawn.append(lines(table))
        assert fast.scroll_offset == plain.scroll_offset and fast.scroll_x > 0
        assert fast.cursor_row == plain.cursor_row == 1
        assert drawn[0] == drawn[1]


async def test_a_refresh_renders_again_only_the_cells_that_changed_and_keeps_the_cursor_on_its_row() -> (
    None
):
    app = Tables()
    async with app.run_test(size=(100, 40)) as pilot:
        fast = app.query_one("#fast", FastTable)
        rows = KeyedRows(fast, COLUMNS)
        rows.apply(ROWS)
        fast.move_cursor(row=2)
        await pilot.pause()
        lines(fast)
        rendered: list[object] = []
        real = fast._render_cell

        def counting(value: object, *args: Any) -> Any:
            rendered.append(value)
            return real(value, *args)

        fast._render_cell = counting  # type: ignore[method-assign, assignment]
        update = [(k, (f"now {k}", *c[1:])) if k == "k1" else (k, c) for k, c in ROWS]
        new_top = ("new", ("row 99", Text("[n]"), "", None, 0.0))
        assert rows.apply([new_top, *update]) == 2
        await pilot.pause()
        lines(fast)
        again = set(map(str, rendered))
        assert {"now k1", "row 99", "[n]"} <= again and not again & {
            "row 2",
            "row 10",
            "[10]",
            "xxx",
        }
        assert len(rendered) <= 12  # the new row, the changed cell
        assert (
            rows.cursor_key() == "k2" and fast.cursor_row == 3
        )  # the row it was on, one lower now

        assert rows.apply([new_top]) == len(ROWS)  # everything else went, in one removal
        await pilot.pause()
        assert fast.row_count == 1 and rows.cursor_key() == "new"


async def test_columns_widen_as_values_arrive_and_a_narrower_value_leaves_them_as_they_are() -> (
    None
):
    app = Tables()
    async with app.run_test(size=(100, 40)):
        fast = app.query_one("#fast", FastTable)
        name, _ = fast.add_columns("NAME", "STATUS")
        fast.add_row("a", "ok", key="a")
        assert fast.columns[name].width == 4 + 2  # the label, padded
        fast.add_row("a much longer name", "ok", key="b")  # no idle in between
        assert fast.columns[name].width == 18 + 2
        fast.update_cell("b", name, "short", update_width=True)
        assert fast.columns[name].width == 18 + 2 and fast.get_cell("b", name) == "short"
        assert fast.virtual_size.width == 20 + 8 and fast.virtual_size.height == 3
        fast.clear(columns=True)
        assert fast.columns == {} and fast.row_count == 0 and fast.virtual_size.height == 1


async def test_keys_move_the_cursor_and_enter_selects_its_row() -> None:
    app = Tables()
    async with app.run_test(size=(100, 40)) as pilot:
        fast = app.query_one("#fast", FastTable)
        fast.styles.height = 12  # the header and 11 rows
        KeyedRows(fast, COLUMNS).apply(ROWS)
        fast.focus()
        await pilot.pause()
        assert app.highlighted == ["k0"]  # the first row arrived under the cursor
        await pilot.press("down", "down", "up")
        assert fast.cursor_row == 1 and app.highlighted[-3:] == ["k1", "k2", "k1"]
        await pilot.press("pagedown")
        assert fast.cursor_row == 12 and fast.scroll_offset.y > 0
        await pilot.press("ctrl+end")
        assert fast.cursor_row == 29 and app.highlighted[-1] == "k29"
        await pilot.press("ctrl+home", "enter")
        await pilot.pause()
        assert fast.cursor_row == 0 and fast.scroll_offset.y == 0 and app.selected == ["k0"]


async def test_a_click_puts_the_cursor_on_a_row_and_a_second_click_selects_it() -> None:
    app = Tables()
    async with app.run_test(size=(100, 40)) as pilot:
        plain, fast = app.query_one("#plain", DataTable), app.query_one("#fast", FastTable)
        plain.display = False
        KeyedRows(fast, COLUMNS).apply(ROWS)
        await pilot.pause()
        await pilot.click(fast, offset=(3, 4))  # the header, then rows 0..3
        assert fast.cursor_row == 3 and app.selected == []
        await pilot.click(fast, offset=(60, 4))  # the same row, right of the last column
        await pilot.pause()
        assert app.selected == ["k3"]
        await pilot.click(fast, offset=(3, 0))  # the header selects nothing
        await pilot.pause()
        assert fast.cursor_row == 3 and app.selected == ["k3"]
