"""Durations, cron schedules, and the committed JSON Schemas staying in step with the models."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agen.bundle import schemas
from agen.bundle.cron import parse_schedule
from agen.cli._common import parse_duration_ms as cli_parse_duration_ms
from agen.errors import InvalidError
from agen.util.duration import format_duration_ms, parse_duration_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("0", 0),
        ("30s", 30_000),
        ("5m", 300_000),
        ("1h30m", 5_400_000),
        ("720h", 2_592_000_000),
        ("250ms", 250),
        ("1.5h", 5_400_000),
        ("1m0.5s", 60_500),
        ("1500us", 1),
        ("2d", 172_800_000),
        (" 10s ", 10_000),
    ],
)
def test_go_style_durations_parse_to_milliseconds(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "5", "5 min", "m", "1h-5m", "abc", "1.2.3s", "10S"])
def test_bad_durations_raise_value_error_naming_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration; use forms like"):
        parse_duration_ms(text)


def test_negative_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        parse_duration_ms("-5s")


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0s"),
        (250, "250ms"),
        (90_000, "1m30s"),
        (3_600_000, "1h"),
        (5_400_500, "1h30m0.5s"),
        (1_000, "1s"),
    ],
)
def test_durations_format_like_go(ms: int, text: str) -> None:
    assert format_duration_ms(ms) == text


@given(st.integers(min_value=0, max_value=10**12))
def test_format_then_parse_round_trips(ms: int) -> None:
    assert parse_duration_ms(format_duration_ms(ms)) == ms


def test_cli_duration_flag_errors_name_the_flag() -> None:
    assert cli_parse_duration_ms("1h", flag="--since") == 3_600_000
    with pytest.raises(InvalidError, match=r"^--since: \"yesterday\" is not a duration"):
        cli_parse_duration_ms("yesterday", flag="--since")


def _ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> int:
    return int(datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp() * 1000)


def test_cron_schedules_compute_next_due_time_in_their_zone() -> None:
    after = _ms(2024, 1, 15, 8, 30)  # a Monday, 09:30 in Paris (UTC+1)
    assert parse_schedule("*/5 * * * *").next_after_ms(after) == _ms(2024, 1, 15, 8, 35)
    assert parse_schedule("@hourly").next_after_ms(after) == _ms(2024, 1, 15, 9, 0)
    assert parse_schedule("CRON_TZ=Europe/Paris 0 9 * * *").next_after_ms(after) == _ms(
        2024, 1, 16, 8, 0
    )
    assert parse_schedule("CRON_TZ=Europe/Paris @daily").next_after_ms(after) == _ms(
        2024, 1, 15, 23, 0
    )
    assert parse_schedule("@every 30s").next_after_ms(after) == after + 30_000
    assert parse_schedule("@every 30s").next_after_ms(after + 1) == after + 30_000


def test_cron_next_due_is_strictly_after_a_due_time() -> None:
    due = _ms(2024, 1, 15, 9, 0)
    assert parse_schedule("0 * * * *").next_after_ms(due) == _ms(2024, 1, 15, 10, 0)


@pytest.mark.parametrize(
    "text", ["* * * * * *", "@every", "@every 1x", "CRON_TZ=Nowhere/Else * * * * *", "60 * * * *"]
)
def test_bad_schedules_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_schedule(text)


def test_committed_json_schemas_match_the_models() -> None:
    assert schemas.stale() == [], "run: python -m agen.bundle.schemas"


def test_stale_schema_is_detected(tmp_path: Path) -> None:
    schemas.write(tmp_path)
    assert schemas.stale(tmp_path) == []
    (tmp_path / "config.schema.json").write_text("{}")
    (tmp_path / "plugin.schema.json").unlink()
    assert schemas.stale(tmp_path) == ["plugin", "config"]
