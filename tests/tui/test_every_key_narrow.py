"""Every bound key and Enter on every row of every screen at 80x24 (see tests/tui/every_key.py)."""

from __future__ import annotations

from pathlib import Path

from tests.tui.every_key import SIZES, press_everything_everywhere


async def test_no_key_or_row_on_any_screen_stops_the_tui_or_the_hub_at_80x24(
    tmp_path: Path,
) -> None:
    assert await press_everything_everywhere(tmp_path, SIZES["narrow"]) == {}
