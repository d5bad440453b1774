"""FastTable and KeyedRows: the same pixels as Textual's DataTable, with only changed cells rendered again."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
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

    def compose(self) -> ComposeResult:
        yield DataTable(id="plain", cursor_type="row", zebra_stripes=True)
        yield FastTable(id="fast", cursor_type="row", zebra_stripes=True)


def lines(table: DataTable[Any]) -> list[list[tuple[str, Any]]]:
    """Every visible line as (text, style) segments, meta included (mouse clicks read row/column from it)."""
    table._line_cache.clear()  # what is drawn now, not what a cache kept
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
        assert rows.keys() == [k for k, _ in moved] == [r.key.value for r in fast.ordered_rows]
        assert lines(fast) == lines(plain)


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
        real = fast._render_value

        def counting(value: object, *args: Any) -> Any:
            rendered.append(value)
            return real(value, *args)

        fast._render_value = counting  # type: ignore[method-assign, assignment]
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
        assert (
            len(rendered) <= 12
        )  # the new row, the changed cell, the row the hover coordinate left
        assert (
            rows.cursor_key() == "k2" and fast.cursor_row == 3
        )  # the row it was on, one lower now

        assert rows.apply([new_top]) == len(ROWS)  # everything else went, in one removal
        await pilot.pause()
        assert fast.row_count == 1 and rows.cursor_key() == "new"
