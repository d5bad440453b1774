"""The list commands' tables: aligned columns, the header first, styles kept, IDs and names whole."""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from agen.cli._table import print_table, render_table


def test_list_tables_align_columns_keep_styles_and_never_cut_a_value_when_not_fitted() -> None:
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


def test_only_the_header_is_bold_not_the_rows() -> None:
    table = render_table(("ID", "STATE"), [("t1", "running"), ("t2", Text("failed", style="red"))])
    assert table.style == ""  # a bold base style would make every appended row bold
    bold = [table.plain[s.start : s.end] for s in table.spans if "bold" in str(s.style)]
    assert bold == ["ID  STATE\n"]


def _terminal(width: int) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, force_terminal=True, color_system=None), out


ROW = (
    "01M8KQ6VXME5YZCTCYT4F90971",
    "gate-long",
    "01M8KQ6VXME5YZCTCYT4F90972",
    "workspace.run",
    '{"command": "make build && make test && rm -rf /tmp/agen-scratch-area-for-this-run"}',
    "pending",
    "3s ago",
)
COLUMNS = ("ID", "DEPLOYMENT", "TASK", "TOOL", "ARGUMENTS", "STATE", "ASKED")


def test_a_terminal_row_shortens_free_text_first_and_never_an_id() -> None:
    console, out = _terminal(120)
    print_table(COLUMNS, [ROW], console=console, flexible=("ARGUMENTS",))
    header, row = out.getvalue().splitlines()
    assert header.split() == list(COLUMNS)  # wide enough: nothing dropped, STATE and ASKED included
    assert cell_len(row) <= 120 and row.endswith("3s ago") and "pending" in row
    assert "…" in row and "rm -rf" not in row  # shortened, and visibly so
    assert ROW[0] in row.split() and ROW[2] in row.split()  # the IDs whole, pasteable


def test_no_trunc_and_piped_output_keep_every_value_whole() -> None:
    console, out = _terminal(80)
    print_table(COLUMNS, [ROW], console=console, no_trunc=True, flexible=("ARGUMENTS",))
    assert ROW[4] in out.getvalue() and "…" not in out.getvalue()

    piped = io.StringIO()
    print_table(COLUMNS, [ROW], console=Console(file=piped, width=80, color_system=None))
    assert ROW[4] in piped.getvalue() and "…" not in piped.getvalue()


def test_a_narrow_terminal_drops_columns_from_the_right_but_never_a_key_or_an_id() -> None:
    """At 80 columns (and narrower) the other columns shrink to their headers, then go from the
    right; the ID, DEPLOYMENT and TASK columns stay whole, so every ID can be pasted."""
    for width in (80, 70):
        console, out = _terminal(width)
        print_table(COLUMNS, [ROW], console=console, flexible=("ARGUMENTS",))
        header, row = out.getvalue().splitlines()
        shown = header.split()
        assert shown == list(COLUMNS[: len(shown)]) and {"ID", "DEPLOYMENT", "TASK"} <= set(shown)
        assert cell_len(row) <= width and "ASKED" not in shown
        assert row.split()[:3] == [ROW[0], ROW[1], ROW[2]]

    console, out = _terminal(40)  # narrower than the keys alone: the terminal wraps them, whole
    print_table(COLUMNS, [ROW], console=console, flexible=("ARGUMENTS",))
    header, row = out.getvalue().splitlines()
    assert header.split() == ["ID", "DEPLOYMENT", "TASK"] and row.split() == list(ROW[:3])


def test_a_value_of_several_lines_shows_its_first_line_in_a_terminal_and_piped() -> None:
    failure = "failing (MCP server 'fs' exited 1:\nTraceback (most recent call last):\n  ...)"
    for console, out in (
        _terminal(200),
        (lambda o: (Console(file=o, width=1000), o))(io.StringIO()),
    ):
        print_table(("NAME", "ACTIVITY"), [("bot", failure)], console=console)
        lines = out.getvalue().splitlines()
        assert len(lines) == 2 and lines[1].split(None, 1) == [
            "bot",
            "failing (MCP server 'fs' exited 1: …",
        ]


def test_the_plain_text_of_a_styleless_console_is_what_rich_would_print() -> None:
    """Piped output skips rich's renderer: the lines must be exactly the ones it printed."""
    rows: list[tuple[str | Text, ...]] = [
        ("hello", Text("working", style="green"), "hi", "3s ago"),
        ("ünïcødé-名前", Text("stopped (paused)", style="red"), "two\nlines", "-"),
        ("x", "", "trailing space ", ""),
        ("🙂 wide", Text(""), "", "1d ago"),
    ]
    columns = ("NAME", "ACTIVITY", "INPUT", "LAST ACTIVE")
    drawn = io.StringIO()
    Console(file=drawn, width=1000, soft_wrap=False, highlight=False, color_system=None).print(
        render_table(columns, rows), no_wrap=True, crop=False, overflow="ignore", end=""
    )
    printed = io.StringIO()
    print_table(columns, rows, console=Console(file=printed, width=1000, color_system=None))
    assert printed.getvalue() == drawn.getvalue() == render_table(columns, rows).plain
    assert printed.getvalue().splitlines()[2].startswith("ünïcødé-名前  stopped (paused)  two …")


def test_a_console_that_draws_styles_still_gets_them() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system="standard")
    print_table(
        ("ID", "STATE"), [("t2", Text("failed", style="red"))], console=console, no_trunc=True
    )
    assert "\x1b[1m" in out.getvalue() and "\x1b[31mfailed" in out.getvalue()
