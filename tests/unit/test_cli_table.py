"""The list commands' tables: aligned columns, the header first, styles kept, no value ever cut."""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from agen.cli._table import print_table, render_table


def test_list_tables_align_columns_keep_styles_and_never_cut_a_value() -> None:
    long_id = "01M8KQ6VXME5YZCTCYT4F90971-" + "x" * 150  # wider than any terminal
    table = render_table(
        ("NAME", "ACTIVITY", "INPUT"),
        [
            ("hello", Text("working", style="green"), "hi"),
            ("ünïcødé-名前", Text("stopped (paused)", style="red"), long_id),
        ],
    )
    lines = table.plain.splitlines()
    assert lines[0].split() == ["NAME", "ACTIVITY", "INPUT"]
    starts = [
        cell_len(line[: line.index(word)])
        for line, word in zip(lines, ("ACTIVITY", "working", "stopped"), strict=True)
    ]
    assert len(set(starts)) == 1  # one column start on screen, double-width characters included
    assert lines[2].endswith(long_id)
    styles = {table.plain[s.start : s.end]: str(s.style) for s in table.spans}
    assert styles["working"] == "green" and styles["stopped (paused)"] == "red"

    out = io.StringIO()
    print_table(("A", "B"), [("1", "2")], console=Console(file=out, width=20, color_system=None))
    assert out.getvalue() == "A  B\n1  2\n"
