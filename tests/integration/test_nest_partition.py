"""A Nest cut off from the Hub past a lease, then back (issue #31 item 15): ExtendLeases answers each
lease on its own, so the one task taken over meanwhile stops at once on the returning Nest, with one
line saying so, while its other leases are extended; a task the Nest finished under its own lease is
simply not extended. A real Hub on both stores, an enrolled (bound) Nest's credential, and the link
cut in-process by a transport that drops every call while the test says so."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import BaseModel

from agen.api.registry import Rpc
from agen.bundle import digest_files
from agen.client import Client, InProcessTransport, unreachable
from agen.domain import Outcome, OutcomeStatus
from agen.hub import queue as q
from agen.hub.auth import Principal
from agen.hub.definitions import put_definition
from agen.hub.fleet.instances import register_nest
from agen.hub.service import Hub
from agen.nest.client_port import ClientHubPort
from agen.nest.manager import Manager
from agen.store import Store, Tx
from agen.testing.fake_hub_port import AGENT_FILES
from agen.wire.nests import LeaseExtension
from tests.unit.nest_helpers import Factory, until
from tests.unit.queue_helpers import add_deployment, new_task


class CutLink(InProcessTransport):
    """The Nest's link to the Hub; while ``cut``, every call fails as an unreachable Hub."""

    cut = False

    async def call(self, rpc: Rpc[Any, Any], request: BaseModel) -> BaseModel:
        if self.cut:
            raise unreachable("in-process", "the test cut the link")
        return await super().call(rpc, request)


async def seed(hub: Hub) -> tuple[str, str, str]:
    """A pool deployment assigned to Nest ``a`` (enrolled), and a second Nest ``b``."""

    def fn(tx: Tx) -> tuple[str, str, str]:
        dep = add_deployment(tx, "d")
        digest = digest_files(AGENT_FILES)
        def_id = put_definition(tx, "d", digest, AGENT_FILES)
        tx.execute(
            "UPDATE deployments SET definition_id = ?, digest = ? WHERE id = ?",
            (def_id, digest, dep),
        )
        a, b = register_nest(tx, "a", capacity=4), register_nest(tx, "b", capacity=4)
        tx.execute(
            "INSERT INTO assignments (deployment_id, nest_id, count, digest, leader_epoch, updated_ms)"
            " VALUES (?,?,?,?,?,?)",
            (dep, a, 1, digest, 1, tx.now_ms),
        )
        return dep, a, b

    return await hub.store.write(fn)


def nest_principal(nest_id: str) -> Principal:
    return Principal(
        id=f"nest-{nest_id}", name="a", scopes=frozenset({"nest"}), kind="nest", nest_id=nest_id
    )


async def lease_row(store: Store, task_id: str) -> dict[str, Any]:
    row = await store.one(
        "SELECT state, lease_id, lease_nest_id, lease_expires_ms FROM tasks WHERE id = ?",
        (task_id,),
    )
    assert row is not None
    return row


async def test_a_nest_back_from_a_partition_stops_the_run_taken_over_and_keeps_the_others(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    hub = Hub(store)
    dep, nest_a, nest_b = await seed(hub)
    link = CutLink(hub, nest_principal(nest_a))
    factory = Factory()
    m = Manager(ClientHubPort(Client(link)), executor_factory=factory, name="a")
    await m.start()
    await m.tick()

    async def submit(text: str) -> str:
        row, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, text)))
        hub.work.notify()
        return row.id

    moved = await submit("moved")
    await until(lambda: bool(factory.executors) and factory.executors[0].started, "the first run")
    first = await lease_row(store, moved)
    kept = await submit("kept")
    ex = factory.executors[0]
    await until(lambda: ex.started == [moved, kept], "both runs")
    assert (await lease_row(store, kept))["lease_expires_ms"] > first["lease_expires_ms"]

    link.cut = True
    await m.extend_leases()  # the Nest cannot reach the Hub: nothing is extended
    # The leader's tick once the first lease ran out: it goes back to the queue, and Nest b takes it.
    expired = await store.write(
        lambda tx: q.expire_leases(tx, first["lease_expires_ms"] + 1, deployment_ids=[dep])
    )
    assert [(e.task_id, e.action) for e in expired] == [(moved, "requeued")]
    [taken] = await store.write(
        lambda tx: q.lease_tasks(
            tx, deployment_id=dep, nest_id=nest_b, instance_id="ib", limit=1, lease_ms=30_000
        )
    )
    assert taken.task.id == moved
    before = (await lease_row(store, kept))["lease_expires_ms"]

    link.cut = False
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agen.nest"):
        await m.extend_leases()
    await until(lambda: ex.cancelled == [moved], "the run taken over to stop at once")
    after = await lease_row(store, kept)
    assert after["lease_nest_id"] == nest_a and after["lease_expires_ms"] > before
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"nest a: task {moved} is no longer leased here (leased again, by nest b, taken over while"
        " this Nest was cut off from the Hub ("
    ) and lines[0].endswith("s)); its run stops here")
    assert (await lease_row(store, moved))["lease_nest_id"] == nest_b  # Nest a never reported it

    ex.finish(kept)
    await until(
        lambda: kept not in {t for i in m.instances.values() for t in i.running},
        "the kept task to complete",
    )
    assert (await lease_row(store, kept))["state"] == "succeeded"
    await m.drain(5)


async def test_a_task_the_nest_finished_itself_is_not_extended_and_not_reported_lost(
    store: Store,
) -> None:
    """Its completion crossed an extension that still named it: the Hub answers ``finished``, which
    the Nest passes over in silence (the Hub used to refuse the whole call, "task … is not leased by
    nest …", and the Nest logged it as a failure to extend), and extends the rest."""
    hub = Hub(store)
    dep, nest_a, _ = await seed(hub)
    port = ClientHubPort(Client.in_process(hub, nest_principal(nest_a)))
    await store.write(lambda tx: q.submit_task(tx, new_task(dep, "one")))
    await store.write(lambda tx: q.submit_task(tx, new_task(dep, "two")))
    done, running = await port.lease(nest_a, "ia", dep, 2, 30_000)
    await port.complete(done.ref, "succeeded", Outcome(status=OutcomeStatus.DONE, summary="ok"))
    answers = await port.extend([done.ref, running.ref], 30_000)
    assert [(a.task_id, a.status) for a in answers] == [
        (done.id, "finished"),
        (running.id, "extended"),
    ]
    assert answers[0] == LeaseExtension(task_id=done.id, status="finished")
