"""Driving the TUI against a real embedded Hub: wait for a condition instead of sleeping blindly."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from agen.tui.widgets.table import FastTable


async def until(
    pilot: Pilot[Any], cond: Callable[[], bool], what: str, limit_s: float = 20.0
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def cells(table: FastTable, column: int) -> list[str]:
    return [str(table.get_row_at(i)[column]) for i in range(table.row_count)]
