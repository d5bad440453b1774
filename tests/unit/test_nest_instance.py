"""An instance against the shipped FakeHubPort: leasing to its free slots, fencing, suspend, drain."""

from __future__ import annotations

import logging

import pytest

from agen.errors import StoreError
from agen.nest.executor import ExecResult
from agen.nest.instance import Instance
from agen.testing.fake_hub_port import FakeHubPort
from tests.unit.nest_helpers import FakeExecutor, until


def instance(port: FakeHubPort, ex: FakeExecutor, **deploy: object) -> Instance:
    a = port.deploy(**deploy)  # type: ignore[arg-type]
    return Instance("inst-1", a, ex, port, port.nest_id, lease_ms=30_000)


async def test_an_instance_leases_only_its_free_slots_and_leases_again_as_runs_end() -> None:
    port, ex = FakeHubPort(), FakeExecutor()
    inst = instance(port, ex, max_concurrency=2)
    tasks = [port.submit("dep-d", f"t{i}") for i in range(3)]
    inst.start()
    await until(lambda: len(ex.started) == 2, "two runs")
    assert [c.args["limit"] for c in port.calls_of("lease")] == [2]
    assert inst.report().state == "busy" and inst.report().in_flight == 2
    ex.finish(tasks[0])
    await until(lambda: len(ex.started) == 3, "the third task leased into the freed slot")
    assert [c.args["limit"] for c in port.calls_of("lease")][:2] == [2, 1]
    ex.finish(tasks[1])
    ex.finish(tasks[2])
    await until(lambda: len(port.completed) == 3, "three completions")
    assert {s for s, _, _ in port.completed.values()} == {"succeeded"}
    await inst.drain(5)


async def test_a_run_whose_lease_was_lost_stops_and_reports_nothing() -> None:
    port, ex = FakeHubPort(), FakeExecutor()
    inst = instance(port, ex)
    task = port.submit("dep-d")
    inst.start()
    await until(lambda: ex.started == [task], "the run")
    port.lose_lease(task)
    inst.lease_lost(task)
    await until(lambda: not inst.running, "the run to stop")
    assert ex.cancelled == [task]
    assert port.completed == {} and port.released == {}
    await inst.drain(5)


async def test_a_result_reported_on_a_stale_lease_is_fenced_and_the_instance_goes_on() -> None:
    port, ex = FakeHubPort(), FakeExecutor()
    inst = instance(port, ex)
    first = port.submit("dep-d")
    inst.start()
    await until(lambda: ex.started == [first], "the run")
    port.lose_lease(first)  # expired meanwhile; the Nest has not heard yet
    ex.finish(first)
    await until(lambda: not inst.running, "the run to end")
    assert port.calls_of("complete") and first not in port.completed
    second = port.submit("dep-d")
    await until(lambda: second in ex.runs, "the next task")
    ex.finish(second)
    await until(lambda: second in port.completed, "the next completion")
    await inst.drain(5)


async def test_a_suspended_run_gives_its_task_back_waiting() -> None:
    port, ex = FakeHubPort(), FakeExecutor()
    inst = instance(port, ex)
    task = port.submit("dep-d")
    inst.start()
    await until(lambda: ex.started == [task], "the run")
    ex.finish(task, ExecResult(status="waiting", outcome=None, wait_for="child:c1"))
    await until(lambda: task in port.suspended, "the suspend")
    assert port.suspended[task] == "child:c1" and task not in port.completed
    await inst.drain(5)


async def test_draining_an_instance_gives_its_running_tasks_back_without_counting_an_attempt() -> (
    None
):
    port, ex = FakeHubPort(), FakeExecutor()
    inst = instance(port, ex, max_concurrency=2)
    tasks = [port.submit("dep-d") for _ in range(2)]
    inst.start()
    await until(lambda: len(ex.started) == 2, "two runs")
    await inst.drain(30, stop_runs=True)
    assert ex.drained and ex.closed and inst.state == "stopped"
    assert {t: port.released[t][0] for t in tasks} == {t: False for t in tasks}
    assert port.completed == {}


async def test_a_run_still_going_at_the_drain_deadline_is_stopped_and_released() -> None:
    port, ex = FakeHubPort(), FakeExecutor()
    inst = instance(port, ex)
    task = port.submit("dep-d")
    inst.start()
    await until(lambda: ex.started == [task], "the run")
    await inst.drain(0.01)  # no stop_runs: the run ignores the drain and outlives the deadline
    assert ex.cancelled == [task]
    assert port.released[task] == (False, "instance stopped while the task ran")


async def test_a_task_kind_instance_leases_exactly_one_task_then_stops() -> None:
    port, ex = FakeHubPort(), FakeExecutor()
    inst = instance(port, ex, kind="task", max_concurrency=4)
    first, second = port.submit("dep-d"), port.submit("dep-d")
    main = inst.start()
    await until(lambda: ex.started == [first], "the one run")
    ex.finish(first)
    await main
    assert inst.state == "stopped" and ex.closed
    assert [c.args["limit"] for c in port.calls_of("lease")] == [1]
    assert second not in ex.started and port.queued["dep-d"][0].id == second


async def test_a_store_that_cannot_write_fails_the_task_with_one_log_line_not_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A full or read-only store is not a bug of the instance: the task fails saying why, and the
    log says so in one line naming the task; an unplanned error still logs its traceback."""
    port, ex = FakeHubPort(), FakeExecutor()
    inst = instance(port, ex, max_concurrency=2)
    full, bug = port.submit("dep-d", "full"), port.submit("dep-d", "bug")
    inst.start()
    await until(lambda: len(ex.started) == 2, "both runs")
    with caplog.at_level(logging.INFO):
        ex.runs[full].set_exception(StoreError("the store agen.db is full; free disk space"))
        ex.runs[bug].set_exception(RuntimeError("a bug"))
        await until(lambda: len(port.completed) == 2, "both failures reported")
    status, _, error = port.completed[full]
    assert status == "failed" and "is full" in str(error)
    mine = [r for r in caplog.records if full in r.getMessage()]
    assert len(mine) == 1 and mine[0].exc_info is None and "is full" in mine[0].getMessage()
    theirs = [r for r in caplog.records if bug in r.getMessage()]
    assert len(theirs) == 1 and theirs[0].exc_info is not None
    await inst.drain(5)
