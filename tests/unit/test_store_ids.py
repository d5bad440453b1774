"""new_ulid: the cheap id generator every hot-path row uses must produce real, ordered ULIDs."""

from __future__ import annotations

import time

import pytest
from ulid import ULID

from agen.util.ulid import new_ulid


def test_new_ulid_ids_parse_as_ulids_carrying_the_current_time() -> None:
    before = time.time_ns() // 1_000_000
    ids = [new_ulid() for _ in range(1000)]
    after = time.time_ns() // 1_000_000
    for text in ids:
        parsed = ULID.from_str(text)
        assert str(parsed) == text and len(text) == 26
        assert before <= parsed.milliseconds <= after


def test_new_ulid_ids_are_unique_and_sort_in_creation_order() -> None:
    ids = [
        new_ulid() for _ in range(20_000)
    ]  # many share a millisecond: randomness + 1 keeps them ordered
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)


def test_ids_in_one_millisecond_count_up_through_a_carry_into_the_cached_high_bits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agen.util import ulid

    ms = 1_795_958_206_388
    monkeypatch.setattr(time, "time_ns", lambda: ms * 1_000_000)
    for start in (0xFFFFE, (12345 << 20) | 0xFFFF0, (1 << 70) - 2, 7):
        monkeypatch.setattr(ulid, "_random_bits", lambda _n, start=start: start)
        clock = ulid._UlidClock()
        ids = [clock.new() for _ in range(40)]
        assert ids == [
            str(ULID.from_bytes(ms.to_bytes(6, "big") + (start + i).to_bytes(10, "big")))
            for i in range(40)
        ]


def test_agen_makes_every_id_with_new_ulid_not_python_ulid() -> None:
    """One id source: python-ulid only parses and converts ids (otel/ids.py), it never makes them."""
    import ast
    from pathlib import Path

    import agen

    root = Path(agen.__file__).parent
    makers = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "ULID"
                and not node.args
            ):
                makers.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert makers == []
