"""JSON columns: agen's one encoder (pydantic-core's) writes exactly what json.JSONEncoder writes with
its options (compact, key order kept, non-ASCII as is, unknown types by str) for every kind of value
agen stores; two kinds agen never stores come out differently, as pinned below."""

from __future__ import annotations

import datetime
import decimal
import enum
import json
from typing import Any

import pytest

from agen.store.base import dumps, loads

REFERENCE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


class Color(enum.StrEnum):
    RED = "red"


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1, "b": [1, 2.5, None, True, False], "ü": 'ä\n"x\u2028\x00'},
        [],
        {},
        "text",
        0,
        -0.0,
        1e300,
        10**30,
        float("nan"),
        float("-inf"),
        None,
        True,
        (1, "a"),
        {"c": Color.RED},
        {"d": decimal.Decimal("1.50"), 7: "int key", True: 2, 2.5: 3},
        [{"nested": [[{"x": "y" * 300}]]}],
    ],
)
def test_column_json_is_what_json_encoder_writes_with_the_same_options(value: Any) -> None:
    assert dumps(value) == REFERENCE(value)


def test_a_datetime_is_written_in_iso_form_and_a_none_key_as_none() -> None:
    """Where pydantic-core differs from json (agen keeps times as integer ms and never keys by None)."""
    assert (
        dumps({"when": datetime.datetime(2026, 1, 2, 3, 4, 5)}) == '{"when":"2026-01-02T03:04:05"}'
    )
    assert dumps({None: 1}) == '{"None":1}'


def test_column_json_reads_back_as_the_value_it_was_made_from() -> None:
    value = {"outcome": {"status": "done", "summary": "ok ✓"}, "turns": [1, 2], "cost": 0.25}
    assert loads(dumps(value)) == value
