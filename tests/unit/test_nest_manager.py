"""The Manager against the shipped FakeHubPort: reconcile, lease extension, crash-loop back-off, drain.

Heartbeats are driven by calling ``tick()`` and ``extend_leases()`` directly, and the back-off reads
an injected clock, so nothing here waits on real time.
"""

from __future__ import annotations

import logging

import pytest

from agen.nest.manager import BACKOFF_BASE_MS, Manager
from agen.nest.port import START_FAILED
from agen.testing.fake_hub_port import FakeHubPort
from agen.wire.nests import NEST_LOST_AFTER_MS
from tests.unit.nest_helpers import Factory, FakeExecutor, until


def manager(port: FakeHubPort, factory: Factory, now: list[int] | None = None) -> Manager:
    clock = now if now is not None else [1_000_000]
    return Manager(
        port, executor_factory=factory, name="n1", lease_ms=30_000, clock=lambda: clock[0]
    )


async def test_the_manager_registers_and_starts_what_it_is_assigned_and_drains_surplus() -> None:
    port, factory = FakeHubPort(), Factory()
    a = port.deploy(count=2)
    m = manager(port, factory)
    await m.start()
    assert port.calls_of("register")[0].args["name"] == "n1" and m.nest_id == port.nest_id
    await m.tick()
    assert len(m.instances) == 2 and factory.attempts == 2
    assert port.calls_of("definition_files")[0].args["definition_id"] == a.definition_id
    port.scale(a.deployment_id, 1)
    await m.tick()
    await until(
        lambda: sum(ex.closed for ex in factory.executors) == 1, "the surplus instance to stop"
    )
    await m.tick()  # reaps it and reports it stopped
    assert len(m.instances) == 1
    assert [r.state for r in port.reports[-1]].count("stopped") == 1
    await m.drain(5)


async def test_an_extension_that_finds_a_lease_lost_stops_that_run_without_a_report() -> None:
    port, factory = FakeHubPort(), Factory()
    port.deploy(count=1)
    m = manager(port, factory)
    await m.start()
    await m.tick()
    kept, lost = port.submit("dep-d"), port.submit("dep-d")
    ex = factory.executors[0]
    await until(lambda: len(ex.started) == 2, "both runs")
    port.lose_lease(lost)
    await m.extend_leases()
    extended = port.calls_of("extend")[-1].args
    assert {r.task_id for r in extended["leases"]} == {kept, lost} and extended[
        "lease_ms"
    ] == 30_000
    await until(lambda: ex.cancelled == [lost], "the lost run to stop")
    assert lost not in port.completed and lost not in port.released
    ex.finish(kept)
    await until(lambda: kept in port.completed, "the kept task to complete")
    await m.drain(5)


async def test_a_cancel_hint_stops_the_run_at_once() -> None:
    port, factory = FakeHubPort(), Factory()
    port.deploy(count=1)
    m = manager(port, factory)
    await m.start()
    await m.tick()
    task = port.submit("dep-d")
    await until(lambda: factory.executors[0].started == [task], "the run")
    port.cancel(task)
    await until(lambda: factory.executors[0].cancelled == [task], "the cancelled run to stop")
    assert port.completed == {} and port.released == {}
    await m.drain(5)


async def test_an_executor_that_fails_to_start_is_retried_with_doubling_back_off() -> None:
    port, factory, now = FakeHubPort(), Factory(), [1_000_000]
    port.deploy(count=1)
    factory.fail = "no such model"
    m = manager(port, factory, now)
    await m.start()
    await m.tick()
    assert factory.attempts == 1 and not m.instances
    await m.tick()  # the failure goes out with the next heartbeat, once
    failed = [r for r in port.reports[-1] if r.state == "failed"]
    assert [r.exit_reason for r in failed] == [f"{START_FAILED}no such model"]
    now[0] += BACKOFF_BASE_MS - 1
    await m.tick()
    assert factory.attempts == 1  # still backing off
    now[0] += 1
    await m.tick()
    assert factory.attempts == 2
    now[0] += 2 * BACKOFF_BASE_MS - 1  # the second failure doubled the delay
    await m.tick()
    assert factory.attempts == 2
    now[0] += 1
    factory.fail = None
    await m.tick()
    assert factory.attempts == 3 and len(m.instances) == 1
    await m.drain(5)


async def test_draining_the_nest_releases_running_tasks_and_reports_every_instance_stopped() -> (
    None
):
    port, factory = FakeHubPort(), Factory()
    port.deploy(count=2, max_concurrency=1)
    m = manager(port, factory)
    await m.start()
    await m.tick()
    tasks = [port.submit("dep-d") for _ in range(2)]
    await until(lambda: sum(len(ex.started) for ex in factory.executors) == 2, "two runs")
    port.submit("dep-d")  # queued: nobody leases it once the drain starts
    await m.drain(30)
    assert {t: port.released[t][0] for t in tasks} == {t: False for t in tasks}
    assert [r.state for r in port.reports[-1]] == ["stopped", "stopped"]
    assert not m.instances and all(ex.drained and ex.closed for ex in factory.executors)
    assert len(port.queued["dep-d"]) == 1


async def test_a_hub_that_cannot_be_reached_keeps_the_last_assignments_running() -> None:
    port, factory = FakeHubPort(), Factory()
    port.deploy(count=1)
    m = manager(port, factory)
    await m.start()
    await m.tick()
    port.unreachable = True
    await m.tick()
    assert len(m.instances) == 1 and factory.attempts == 1
    port.unreachable = False
    await m.drain(5)


async def test_saturation_is_reported_only_while_calls_wait_on_full_ready_instances() -> None:
    """Seed 000 §5: callers waiting while every ready instance is full, and none starting."""
    port, factory = FakeHubPort(), Factory()
    a = port.deploy(count=1, max_concurrency=1)
    waiting: dict[tuple[str, str], int] = {}
    m = Manager(port, executor_factory=factory, name="n1", waiting_calls=lambda: waiting)
    await m.start()
    await m.tick()
    inst = next(iter(m.instances.values()))
    await until(lambda: inst.state == "ready", "the instance ready")
    waiting[("default", "d")] = 1
    assert m.saturated() == []  # a free slot: the call's task will be leased
    task = port.submit(a.deployment_id)
    await until(lambda: len(factory.executors[0].started) == 1, "the instance busy")
    assert m.saturated() == [a.deployment_id]
    await m.tick()
    assert port.saturated[-1] == [a.deployment_id]  # sent with the heartbeat
    inst.state = "starting"  # one on its way will take the call: no report
    assert m.saturated() == []
    inst.state = "ready"
    waiting.clear()  # nobody waits: a busy instance alone is not saturation
    assert m.saturated() == []
    await m.tick()
    assert port.saturated[-1] == []
    factory.executors[0].finish(task)
    await m.drain(5)


async def test_a_nest_without_the_hub_for_lost_after_stops_its_singletons_and_keeps_its_pools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Seed 000 §5: the Hub places a silent Nest's instances elsewhere after nest_lost_after, so by
    then the Nest has stopped its singleton (its run stops at its next step, its task is not reported)
    and starts it again only once the Hub answers and still assigns it here; pools keep serving."""
    port, factory, now = FakeHubPort(), Factory(), [1_000_000]
    single = port.deploy("s", kind="singleton")
    pool = port.deploy("p")
    m = manager(port, factory, now)
    await m.start()
    await m.tick()
    by_dep = {i.deployment_id: i for i in m.instances.values()}
    assert set(by_dep) == {single.deployment_id, pool.deployment_id}
    ex = by_dep[single.deployment_id].executor
    assert isinstance(ex, FakeExecutor)
    task = port.submit(single.deployment_id)
    await until(lambda: ex.started == [task], "the singleton's run")

    port.unreachable = True
    now[0] += NEST_LOST_AFTER_MS - 1
    await m.tick()
    await m.extend_leases()
    assert by_dep[single.deployment_id].state == "ready" and not ex.drained  # not lost yet
    now[0] += 1
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agen.nest"):
        await m.tick()
    await until(lambda: ex.drained, "the singleton's run to be stopped at its next step")
    await until(lambda: by_dep[single.deployment_id].state == "stopped", "the singleton to stop")
    assert [r.getMessage() for r in caplog.records if "singleton" in r.getMessage()] == [
        f"nest n1: no Hub for 30s (nest_lost_after 30s): stopping singleton s (instance"
        f" {by_dep[single.deployment_id].id}) so it never runs in two places; it starts here again"
        " only when the Hub says so"
    ]
    assert task not in port.completed  # the Hub gives its task to wherever it places the singleton
    for _ in range(3):
        now[0] += 60_000
        await m.tick()
    assert by_dep[pool.deployment_id].state == "ready"  # pools keep serving
    live = [i for i in m.instances.values() if i.state not in ("stopped", "failed")]
    assert [i.deployment_id for i in live] == [pool.deployment_id]  # no singleton started meanwhile

    port.unreachable = False
    await m.tick()
    assert factory.attempts == 3  # the singleton starts here again, as the Hub still assigns it
    await until(
        lambda: (
            [i.state for i in m.instances.values() if i.deployment_id == single.deployment_id]
            == ["ready"]
        ),
        "the singleton back",
    )
    await m.drain(5)
