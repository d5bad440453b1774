"""The domain core: a stored task or run row read into its typed, frozen row in one place."""

from __future__ import annotations

from typing import Any

import pytest

from agen.domain import (
    DeploymentBudget,
    DeploymentKind,
    DeploymentLimits,
    DeploymentRef,
    DeploymentRow,
    DeploymentSizing,
    NewTaskRow,
    Outcome,
    OutcomeStatus,
    RunRef,
    RunRow,
    RunStatus,
    RunUsage,
    TaskBrief,
    TaskLineage,
    TaskOrigin,
    TaskRow,
    TaskState,
    TaskStatus,
    columns,
)
from agen.domain.approvals import ApprovalRow
from agen.domain.memory import MemoryBlockRow
from agen.hub import queue as q
from agen.otel.convert import SpanRow
from agen.runner.records import open_run
from agen.runner.types import RunRequest
from agen.store import SQLiteStore, Store
from agen.store.records import read
from tests.unit.queue_helpers import add_deployment, add_run, new_task


async def test_a_submitted_task_reads_back_as_a_frozen_row_whose_state_is_the_enum(
    store: Store,
) -> None:
    dep = await store.write(lambda tx: add_deployment(tx))
    row, created = await store.write(lambda tx: q.submit_task(tx, new_task(dep, "hi")))
    assert created and isinstance(row, TaskRow)
    assert row.state is TaskState.QUEUED and row.state.value == "queued" and row.held is False
    with pytest.raises(AttributeError):
        row.__setattr__("state", TaskState.RUNNING)  # frozen: a change is a new row
    cancelled = await store.write(lambda tx: q.cancel_task(tx, row.id, by="me"))
    assert cancelled.state is TaskState.CANCELLED
    assert Outcome.model_validate_json(cancelled.outcome or "") == Outcome(
        status=OutcomeStatus.CANCELLED, reason="cancelled", summary="cancelled"
    )


async def test_a_run_opened_by_the_engine_is_a_typed_run_row(store: Store) -> None:
    opened = await store.write(
        lambda tx: open_run(tx, RunRequest(input="x", task_id="t-1"), "me", "fake", None)
    )
    assert isinstance(opened.run, RunRow) and opened.run.status is RunStatus.RUNNING
    again = await store.write(
        lambda tx: open_run(tx, RunRequest(input="x", task_id="t-1", attempt=2), "me", "f", None)
    )
    assert again.resumed and again.run.id == opened.run.id and again.run.epoch == 2


def test_a_row_with_a_state_the_store_never_writes_is_refused() -> None:
    with pytest.raises(ValueError, match="paused"):
        read(
            TaskRow,
            {
                "id": "t",
                "namespace": "default",
                "deployment_id": "d",
                "deployment": "d",
                "state": "paused",
                "input": "",
                "root_task_id": "t",
                "seq": 1,
                "created_ms": 0,
                "updated_ms": 0,
            },
        )


_TABLE_ROWS: list[tuple[str, Any]] = [
    ("tasks", TaskRow),
    ("runs", RunRow),
    ("deployments", DeploymentRow),
    ("approvals", ApprovalRow),
    ("memory_blocks", MemoryBlockRow),
    ("spans", SpanRow),  # what the OTLP exporter reads (agen.otel.convert)
]


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


@pytest.mark.parametrize(("table", "row_class"), _TABLE_ROWS)
async def test_each_typed_row_carries_every_column_of_its_table(
    store: Store, table: str, row_class: Any
) -> None:
    """A migration that adds a column must add the field too: a row read into its typed class
    otherwise drops that column silently (extra columns are ignored)."""
    columns = await _columns(store, table)
    assert columns, f"no columns read for {table}"
    assert set(row_class._fields) == columns


_PARTIAL_ROWS: list[tuple[str, Any]] = [
    ("deployments", DeploymentRef),
    ("deployments", DeploymentBudget),
    ("deployments", DeploymentSizing),
    ("deployments", DeploymentLimits),
    ("tasks", TaskStatus),
    ("tasks", TaskOrigin),
    ("tasks", TaskBrief),
    ("tasks", TaskLineage),
    ("tasks", NewTaskRow),
    ("runs", RunUsage),
    ("runs", RunRef),
]


@pytest.mark.parametrize(("table", "row_class"), _PARTIAL_ROWS)
async def test_each_partial_row_names_only_columns_of_its_table(
    store: Store, table: str, row_class: Any
) -> None:
    """A partial read's SELECT list is its fields (``columns``): a renamed column fails here, not
    in the Hub's leader tick."""
    assert set(row_class._fields) <= await _columns(store, table)


async def test_partial_deployment_reads_agree_with_the_whole_row(store: Store) -> None:
    dep_id = await store.write(lambda tx: add_deployment(tx, "p", kind="task", desired=2))
    whole = read(DeploymentRow, await _one(store, "SELECT * FROM deployments WHERE id = ?", dep_id))
    for partial in (DeploymentRef, DeploymentBudget, DeploymentSizing, DeploymentLimits):
        row = read(
            partial,
            await _one(store, f"SELECT {columns(partial)} FROM deployments WHERE id = ?", dep_id),
        )
        assert isinstance(row, partial)
        assert row._asdict() == {f: getattr(whole, f) for f in partial._fields}
    sizing = read(
        DeploymentSizing,
        await _one(
            store, f"SELECT {columns(DeploymentSizing)} FROM deployments WHERE id = ?", dep_id
        ),
    )
    assert sizing.kind is DeploymentKind.TASK and sizing.paused is False and sizing.desired == 2


async def test_partial_task_and_run_reads_are_typed(store: Store) -> None:
    dep_id = await store.write(lambda tx: add_deployment(tx))
    task, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep_id, "hi")))
    run_id = await store.write(lambda tx: add_run(tx, task.id))
    status = read(
        TaskStatus,
        await _one(store, f"SELECT {columns(TaskStatus)} FROM tasks WHERE id = ?", task.id),
    )
    assert status == TaskStatus(task.id, TaskState.QUEUED, False, None, task.updated_ms)
    assert status.state is TaskState.QUEUED
    origin = read(
        TaskOrigin,
        await _one(store, f"SELECT {columns(TaskOrigin)} FROM tasks WHERE id = ?", task.id),
    )
    assert origin == TaskOrigin(task.id, dep_id, "api", 0)
    brief = read(
        TaskBrief,
        await _one(store, f"SELECT {columns(TaskBrief)} FROM tasks WHERE id = ?", task.id),
    )
    assert brief == TaskBrief(task.id, "default", "d", TaskState.QUEUED, "{}", None)
    lineage = read(
        TaskLineage,
        await _one(store, f"SELECT {columns(TaskLineage)} FROM tasks WHERE id = ?", task.id),
    )
    assert lineage == TaskLineage(task.id, task.id, 0, "{}")
    usage = read(
        RunUsage, await _one(store, f"SELECT {columns(RunUsage)} FROM runs WHERE id = ?", run_id)
    )
    assert usage == RunUsage(task.id, 0.0, 0, 0) and isinstance(usage.cost_usd, float)
    ref = read(
        RunRef, await _one(store, f"SELECT {columns(RunRef)} FROM runs WHERE id = ?", run_id)
    )
    assert ref.id == run_id and ref.root_run_id


def test_a_partial_row_names_a_missing_column_and_refuses_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="definition_id"):
        read(DeploymentRef, {"id": "d", "namespace": "default", "name": "d"})
    with pytest.raises(ValueError, match="cluster"):
        read(
            DeploymentBudget,
            {"id": "d", "namespace": "default", "name": "d", "kind": "cluster", "budget": "{}"},
        )
    assert columns(DeploymentRef, "d") == "d.id, d.namespace, d.name, d.definition_id"


async def _one(store: Store, sql: str, key: str) -> dict[str, Any]:
    row = await store.one(sql, (key,))
    assert row is not None
    return row
