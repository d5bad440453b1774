"""effect_unknown is visible to operators: the run and its task are marked, an event says which
call, and `agen runs --effect-unknown` (ListRuns effect_unknown) finds them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.errors import FencedError
from agen.hub import queue as q
from agen.hub.service import Hub
from agen.runner.types import RunRequest
from agen.store import loads
from agen.wire.observe import ListRunsRequest
from agen.wire.tasks import GetTaskRequest
from tests.runner_helpers import FnTool, make, open_store, runner, script
from tests.unit.queue_helpers import add_deployment, new_task


async def test_resuming_past_an_unconfirmed_effect_marks_the_run_and_task_and_records_an_event(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    dep = await store.write(lambda tx: add_deployment(tx))
    task, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, "order")))
    calm, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, "calm")))
    started, release = asyncio.Event(), asyncio.Event()

    async def ship(args: dict[str, Any]) -> str:
        started.set()
        await release.wait()
        return "shipped"

    b = make(script({"toolCalls": [{"name": "ship", "arguments": {}}]}, {"text": "order handled"}))
    old = runner(store, b, FnTool("ship", ship, side_effect=True), owner="host-a")
    first = asyncio.create_task(old.run(RunRequest(input="order", task_id=task.id, deployment="d")))
    await started.wait()  # the effect is recorded as started; its owner is then lost
    new = runner(store, b, FnTool("ship", ship, side_effect=True), owner="host-b")
    res = await new.run(RunRequest(input="order", task_id=task.id, deployment="d", attempt=2))
    assert res.resumed and res.status == "succeeded"
    release.set()
    with pytest.raises(FencedError):
        await first
    await runner(store, make(script({"text": "fine"}))).run(
        RunRequest(input="calm", task_id=calm.id, deployment="d")
    )

    events = await store.all(
        "SELECT run_id, task_id, severity, data FROM events WHERE type = 'run.effect_unknown'"
    )
    assert [(e["run_id"], e["task_id"], e["severity"]) for e in events] == [
        (res.run_id, task.id, "warning")
    ]
    assert loads(events[0]["data"])["tool"] == "ship"

    client = Client.in_process(Hub(store))
    marked = (await client.call(r.ListRuns, ListRunsRequest(effect_unknown=True))).runs
    assert [(run.id, run.effect_unknown) for run in marked] == [(res.run_id, True)]
    every = (await client.call(r.ListRuns, ListRunsRequest())).runs
    assert {run.task_id: run.effect_unknown for run in every} == {
        task.id: True,
        calm.id: False,
    }
    shown = (await client.call(r.GetTask, GetTaskRequest(id=task.id))).task
    assert shown.effect_unknown is True
    assert (await client.call(r.GetTask, GetTaskRequest(id=calm.id))).task.effect_unknown is False
    await store.close()


def _run(effect_unknown: bool) -> Any:
    from agen.wire.observe import Run

    return Run(
        id="r1",
        namespace="default",
        deployment="d",
        task_id="t1",
        root_run_id="r1",
        trace_id="x" * 32,
        status="succeeded",
        activity="idle",
        effect_unknown=effect_unknown,
        started_ms=1,
        updated_ms=2,
        finished_ms=2,
    )


def test_agen_runs_table_says_effect_unknown_beside_the_status() -> None:
    from agen.render.observe import RUN_COLUMNS, runs_rows

    status = RUN_COLUMNS.index("STATUS")
    assert str(runs_rows([_run(True)])[0][status]) == "succeeded, effect unknown"
    assert str(runs_rows([_run(False)])[0][status]) == "succeeded"


def test_tui_tasks_row_marks_a_task_whose_effect_is_unknown() -> None:
    from agen.tui.screens.tasks import row_cells
    from agen.wire.tasks import Task

    base = {
        "id": "t1",
        "namespace": "default",
        "deployment": "d",
        "deployment_id": "d1",
        "state": "succeeded",
        "input": "order",
        "created_ms": 1,
        "updated_ms": 2,
    }
    assert (
        row_cells(Task.model_validate({**base, "effect_unknown": True}))[2] == "succeeded !effect"
    )
    assert row_cells(Task.model_validate(base))[2] == "succeeded"
