"""The list commands' tables (ps, tasks, runs, approvals): aligned columns, a bold header, cell styles kept.

rich's Table measures and lays out every cell to fit the terminal: about 0.85 ms a row here, so
`agen ps` over 1,000 deployments spent 850 ms printing. A list prints one line per row, as
`docker ps` and `gh` do. In a terminal, a row wider than the screen is fitted in this order:
free-text columns (INPUT, ARGUMENTS, ACTIVITY) are shortened with an ellipsis first, then the other
columns down to their header's width, then those other columns are dropped from the right, one at a
time. Key columns (IDs and names: ID, NAME, TASK, RUN, DEPLOYMENT, …) are never shortened or
dropped, so every ID on the screen can be pasted into the next command. ``--no-trunc`` or piped
output keeps every value whole. A value of several lines shows its first line and an ellipsis, so a
row is always one line, piped or not.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.text import Text

Cell = str | Text
GAP = "  "
ELLIPSIS = "…"
MIN_WIDTH = 8  # a shortened cell keeps at least this much (or its header, if wider)


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


KEY_COLUMNS = frozenset(
    {"ID", "NAME", "NAMESPACE", "DEPLOYMENT", "TASK", "RUN", "INSTANCE", "NEST", "PARENT", "ROOT"}
)
"""Headers of columns that hold an ID or a name: never shortened, never dropped (nor is any header
ending in `` ID``)."""


def is_key(column: str) -> bool:
    return column in KEY_COLUMNS or column.endswith(" ID")


def _first_line(cell: Cell) -> Cell:
    """A multi-line value as its first line and an ellipsis: a row is one line."""
    plain = _plain(cell)
    if "\n" not in plain:
        return cell
    head = plain.split("\n", 1)[0].rstrip() + " " + ELLIPSIS
    if isinstance(cell, Text):
        short = cell.copy()
        short.truncate(len(head) - 2)
        short.append(" " + ELLIPSIS)
        return short
    return head


def fit_widths(
    columns: Sequence[str],
    widths: Sequence[int],
    screen: int,
    flexible: Collection[str] = (),
) -> list[int]:
    """Column widths that fit ``screen`` cells, narrowing the widest ``flexible`` columns first, then
    the widest others that are not keys; none goes below its header or MIN_WIDTH, and key columns
    keep their width (see drop_columns for what still does not fit)."""
    out = list(widths)
    floor = [
        w if is_key(c) else min(w, max(cell_len(c), MIN_WIDTH))
        for c, w in zip(columns, widths, strict=True)
    ]
    excess = sum(out) + len(GAP) * (len(out) - 1) - screen
    for group in ([i for i, c in enumerate(columns) if c in flexible], range(len(columns))):
        while excess > 0:
            room = [i for i in group if out[i] > floor[i]]
            if not room:
                break
            widest = max(room, key=lambda i: out[i])
            # Narrow the widest down toward the next widest in one step (not one cell at a time).
            others = [out[i] for i in room if i != widest]
            target = max([floor[widest], *(w for w in others if w < out[widest])], default=0)
            step = min(excess, out[widest] - target) or 1
            out[widest] -= step
            excess -= step
    return out


def _shorten(cell: Cell, width: int) -> Cell:
    if cell_len(_plain(cell)) <= width:
        return cell
    if isinstance(cell, Text):
        short = cell.copy()
        short.truncate(width, overflow="ellipsis")
        return short
    return set_cell_size(cell, width - 1) + ELLIPSIS


def _measure(columns: Sequence[str], cells: Sequence[Sequence[Cell]]) -> list[int]:
    widths = [cell_len(c) for c in columns]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], cell_len(_plain(cell)))
    return widths


def _layout(
    columns: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    width: int | None,
    flexible: Collection[str],
) -> tuple[list[str], list[list[Cell]], list[int]]:
    """The columns shown, the cells (one line each) and the column widths; with ``width``, long
    values shortened, then columns dropped, so a row fits (see the module docstring)."""
    columns = list(columns)
    cells = [[_first_line(c) for c in row] for row in rows]
    widths = _measure(columns, cells)
    if width is None:
        return columns, cells, widths
    fitted = fit_widths(columns, widths, width, flexible)
    while sum(fitted) + len(GAP) * (len(fitted) - 1) > width:
        droppable = [i for i, c in enumerate(columns) if not is_key(c)]
        if not droppable:
            break  # only keys left: the terminal wraps them, whole
        gone = droppable[-1]
        del columns[gone]
        cells = [row[:gone] + row[gone + 1 :] for row in cells]
        widths = _measure(columns, cells)
        fitted = fit_widths(columns, widths, width, flexible)
    if fitted != widths:
        cells = [[_shorten(c, w) for c, w in zip(row, fitted, strict=True)] for row in cells]
    return columns, cells, fitted


def _header(columns: Sequence[str], widths: Sequence[int]) -> str:
    return GAP.join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n"


def render_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    width: int | None = None,
    flexible: Collection[str] = (),
) -> Text:
    """The table as one Text: a bold header line, then a plain line per row, columns padded to the
    widest cell. With ``width`` (a terminal's), long values are shortened so a row fits it."""
    columns, rows, widths = _layout(columns, rows, width, flexible)
    last = len(columns) - 1
    out = Text()
    out.append(_header(columns, widths), style="bold")
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


def plain_table(columns: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """``render_table(columns, rows).plain``, built as strings: what a console that draws no styles
    prints, without rich's Text and renderer (~20 ms of `agen ps` piped, at 1,000 deployments)."""
    columns, cells, widths = _layout(columns, rows, None, ())
    last = len(columns) - 1
    lines = [_header(columns, widths)]
    for row in cells:
        for i, cell in enumerate(row):
            text = _plain(cell)
            lines.append(text if i == last else text + " " * (widths[i] - cell_len(text)) + GAP)
        lines.append("\n")
    return "".join(lines)


def print_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    console: Any = None,
    *,
    no_trunc: bool = False,
    flexible: Collection[str] = (),
) -> None:
    """Print to stdout (or ``console``). In a terminal, rows are fitted to its width unless ``no_trunc``;
    piped, values stay whole and lines lose their trailing padding (stdout_console). A console that
    draws no styles and fits nothing (piped, colour not forced) gets the plain text directly."""
    from agen.cli._common import stdout_console

    console = console or stdout_console()
    fit = console.is_terminal and not no_trunc
    if console.color_system is None and not fit:
        console.file.write(plain_table(columns, rows))
        return
    console.print(
        render_table(columns, rows, width=console.width if fit else None, flexible=flexible),
        no_wrap=True,
        crop=False,
        overflow="ignore",  # rich would otherwise cut a long line at the screen's edge, dropping columns
        end="",
    )
