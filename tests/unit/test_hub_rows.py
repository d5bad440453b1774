"""The Hub's whole-table rows (provider holds, notification targets, spans, events) carry exactly
their table's columns, on both engines, so a read never drops a column a migration added."""

from __future__ import annotations

from typing import Any

import pytest

from agen.hub.events.log import EventRow
from agen.hub.events.notify import NotifyTargetRow
from agen.hub.queue.providers import ProviderHoldRow
from agen.hub.rpc.runs import MessageRow, SpanRow
from agen.store import SQLiteStore, Store, event_log


async def _columns(store: Store, table: str) -> set[str]:
    if isinstance(store, SQLiteStore):
        rows = await store.all(f"SELECT name FROM pragma_table_info('{table}')")
        return {str(r["name"]) for r in rows}
    rows = await store.all(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = ?",
        (table,),
    )
    return {str(r["column_name"]) for r in rows}


@pytest.mark.parametrize(
    ("table", "row_class"),
    [("provider_holds", ProviderHoldRow), ("notify_targets", NotifyTargetRow), ("spans", SpanRow)],
)
async def test_each_whole_row_carries_every_column_of_its_table(
    store: Store, table: str, row_class: Any
) -> None:
    assert set(row_class._fields) == await _columns(store, table)


async def test_a_transcript_message_names_only_columns_of_messages(store: Store) -> None:
    assert set(MessageRow._fields) <= await _columns(store, "messages")


def test_an_event_row_is_the_event_log_columns_in_their_order() -> None:
    assert ", ".join(EventRow._fields) == event_log.COLUMNS
