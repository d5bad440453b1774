"""Typed rows (agen.store.records): the one way a SELECT's rows are read outside the Store."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import NamedTuple

import pytest

from agen.domain import DeploymentKind, TaskState
from agen.store import SQLiteStore, Tx
from agen.store.records import Amount, Count, columns, read, read_all


class _Row(NamedTuple):
    id: str
    state: TaskState
    held: bool
    cost: float
    kind: DeploymentKind | None = None
    note: str | None = None


class _Totals(NamedTuple):
    runs: Count
    spent: Amount


def test_fields_are_converted_from_their_annotations() -> None:
    row = read(_Row, {"id": "t", "state": "queued", "held": 1, "cost": 2, "kind": "pool"})
    assert row == _Row("t", TaskState.QUEUED, True, 2.0, DeploymentKind.POOL, None)
    assert type(row.held) is bool and type(row.cost) is float
    assert (
        read(_Row, {"id": "t", "state": "succeeded", "held": 0, "cost": 0.5, "kind": None}).kind
        is None
    )


def test_aggregates_read_null_as_zero_and_numeric_as_a_number() -> None:
    assert read(_Totals, {"runs": None, "spent": None}) == _Totals(0, 0.0)
    got = read(_Totals, {"runs": Decimal("3"), "spent": Decimal("1.25")})
    assert got == _Totals(3, 1.25) and type(got.runs) is int and type(got.spent) is float


def test_extra_columns_are_ignored_and_defaults_fill_what_a_row_leaves_out() -> None:
    row = read(_Row, {"id": "t", "state": "failed", "held": 0, "cost": 1.0, "extra": "x"})
    assert row.note is None and row.kind is None


def test_a_missing_column_or_an_unknown_value_names_the_type_and_field() -> None:
    with pytest.raises(ValueError, match=r"_Row needs column\(s\) held"):
        read(_Row, {"id": "t", "state": "queued", "cost": 1.0})
    with pytest.raises(ValueError, match=r"_Row\.state: 'paused' is not a known value"):
        read(_Row, {"id": "t", "state": "paused", "held": 0, "cost": 1.0})


def test_a_type_that_is_not_a_named_tuple_is_refused() -> None:
    with pytest.raises(TypeError, match="not a NamedTuple"):
        read(dict, {"a": 1})  # type: ignore[type-var]


def test_columns_is_the_select_list_of_a_row_type() -> None:
    assert columns(_Totals) == "runs, spent"
    assert columns(_Totals, "t") == "t.runs, t.spent"


def test_a_single_column_row_is_a_tuple_of_one() -> None:
    class _Id(NamedTuple):
        id: str

    assert read_all(_Id, [{"id": "a"}, {"id": "b"}]) == [_Id("a"), _Id("b")]


async def test_transactions_and_the_store_return_typed_rows(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    try:

        def write(tx: Tx) -> tuple[_Totals | None, list[_Totals]]:
            tx.execute("CREATE TABLE t (runs INTEGER, spent REAL)")
            tx.execute("INSERT INTO t VALUES (2, 0.5), (NULL, NULL)")
            one = tx.row(_Totals, "SELECT SUM(runs) AS runs, SUM(spent) AS spent FROM t")
            return one, tx.rows(_Totals, f"SELECT {columns(_Totals)} FROM t ORDER BY runs")

        one, every = await store.write(write)
        assert one == _Totals(2, 0.5)
        assert every == [_Totals(0, 0.0), _Totals(2, 0.5)]
        assert await store.row(_Totals, "SELECT runs, spent FROM t WHERE runs = 2") == _Totals(
            2, 0.5
        )
        assert await store.row(_Totals, "SELECT runs, spent FROM t WHERE runs = 9") is None
        assert len(await store.rows(_Totals, "SELECT runs, spent FROM t")) == 2
    finally:
        await store.close()
