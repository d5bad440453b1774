"""The list commands' tables (ps, tasks, runs, approvals): aligned columns, a bold header, cell styles kept.

rich's Table measures and lays out every cell to fit the terminal: about 0.85 ms a row here, so
`agen ps` over 1,000 deployments spent 850 ms printing. A list prints one line per row and never
wraps or cuts a cell, as `ps` and `kubectl get` do (a narrow terminal wraps a long line itself; piped
output keeps whole values), which takes a few milliseconds for 1,000 rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from rich.text import Text

Cell = str | Text
GAP = "  "


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def render_table(columns: Sequence[str], rows: Sequence[Sequence[Cell]]) -> Text:
    """The table as one Text: a bold header line, then a line per row, columns padded to the widest cell."""
    widths = [cell_len(c) for c in columns]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], cell_len(_plain(cell)))
    last = len(columns) - 1
    out = Text(
        GAP.join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n",
        style="bold",
    )
    for row in rows:
        for i, cell in enumerate(row):
            pad = "" if i == last else " " * (widths[i] - cell_len(_plain(cell))) + GAP
            if isinstance(cell, Text):
                out.append_text(cell)
                out.append(pad)
            else:
                out.append(cell + pad)
        out.append("\n")
    return out


def print_table(
    columns: Sequence[str], rows: Sequence[Sequence[Cell]], console: Any = None
) -> None:
    """Print to stdout (or ``console``): piped, lines lose their trailing padding (stdout_console)."""
    from agen.cli._common import stdout_console

    (console or stdout_console()).print(
        render_table(columns, rows), no_wrap=True, crop=False, end=""
    )
