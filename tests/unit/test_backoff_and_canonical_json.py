"""The two small mechanisms every layer shares: the doubling back-off of each retry loop, and the
canonical JSON of what is hashed or signed."""

from __future__ import annotations

import datetime as dt

from agen.runner.approvals import args_hash
from agen.runner.effects import effect_key
from agen.util.backoff import next_backoff
from agen.util.canonical import canonical_json


def test_a_back_off_starts_at_its_first_wait_doubles_and_stops_at_its_cap() -> None:
    waits, last = [], 0
    for _ in range(7):
        last = next_backoff(last, 1_000, 30_000)
        waits.append(last)
    assert waits == [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]
    assert next_backoff(0.0, 0.25, 5.0) == 0.25 and next_backoff(4.0, 0.25, 5.0) == 5.0
    assert next_backoff(0.0, 0.0, 60.0) == 0.0  # no first wait (tests): never any wait
    assert next_backoff(10, 1_000, 30_000) == 1_000  # never shorter than the first wait


def test_canonical_json_depends_on_the_content_alone() -> None:
    a = {"b": [1, {"y": 2, "x": "é"}], "a": None}
    b = {"a": None, "b": [1, {"x": "é", "y": 2}]}
    assert canonical_json(a) == canonical_json(b) == '{"a":null,"b":[1,{"x":"\\u00e9","y":2}]}'
    when = dt.datetime(2025, 1, 2, tzinfo=dt.UTC)
    assert canonical_json({"at": when}) == f'{{"at":"{when}"}}'  # no JSON type: its str


def test_the_same_arguments_in_another_key_order_are_the_same_call() -> None:
    one, other = {"path": "a.txt", "text": "hé"}, {"text": "hé", "path": "a.txt"}
    assert args_hash(one) == args_hash(other)
    assert effect_key("r", 1, 0, "t", one, True) == effect_key("r", 9, 3, "t", other, True)
    assert effect_key("r", 1, 0, "t", one, False) == "r.1.0"
