"""Every bound key and Enter on every row of every screen at 160x45 (see tests/tui/every_key.py)."""

from __future__ import annotations

from pathlib import Path

from tests.tui.every_key import SIZES, press_everything_everywhere


async def test_no_key_or_row_on_any_screen_stops_the_tui_or_the_hub_at_160x45(
    tmp_path: Path,
) -> None:
    assert await press_everything_everywhere(tmp_path, SIZES["wide"]) == {}
