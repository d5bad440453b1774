"""One HubPort, two doors: the same sequence passes in-process and over real HTTP on loopback.

ClientHubPort over ``Client.in_process(hub, LOCAL_NEST)`` and over ``Client.http(url, nest token)``
against the Hub's own app served by uvicorn: register, report, definition files (binary bytes
included), lease, extend, progress, complete, release, suspend, the work long-poll, and fencing
(a stale lease id is the same FencedError on both). Plus the ``nest`` scope: a Nest's token may
call the Nest-facing RPCs and WhoAmI, nothing else, and a viewer may call none of them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import uvicorn

from agen.api import registry as r
from agen.api.app import create_app
from agen.bundle import digest_files
from agen.client import Client
from agen.domain import Outcome, OutcomeStatus
from agen.errors import DeniedError, FencedError, NotFoundError
from agen.hub import queue as q
from agen.hub.auth import LOCAL_NEST, Principal
from agen.hub.definitions import put_definition
from agen.hub.service import Hub
from agen.nest.client_port import ClientHubPort
from agen.store import SQLiteStore, Tx
from agen.util.listen import tcp_listener
from agen.wire.common import Empty
from agen.wire.nests import (
    MAX_LEASES,
    InstanceReport,
    LeaseExtension,
    LeaseRef,
    LeaseTasksRequest,
)
from agen.wire.tasks import ListTasksRequest
from tests.fleet_helpers import enrolled_nest
from tests.unit.queue_helpers import add_deployment, new_task

FILES = {
    "plugin.json": b'{"name": "d", "version": "0.1.0"}',
    "x-agen/blob.bin": bytes(range(256)) * 3,
}


@contextlib.asynccontextmanager
async def served(hub: Hub) -> AsyncIterator[str]:
    """The Hub's real ASGI app on a loopback socket, in this event loop."""
    sock = tcp_listener("127.0.0.1", 0)
    server = uvicorn.Server(
        uvicorn.Config(create_app(hub), log_level="error", lifespan="off", access_log=False)
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not task.done(), "uvicorn did not start"
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


@contextlib.asynccontextmanager
async def port_for(door: str, hub: Hub) -> AsyncIterator[ClientHubPort]:
    if door == "inproc":
        yield ClientHubPort(Client.in_process(hub, LOCAL_NEST))
        return
    _, secret = await enrolled_nest(hub, "n1")  # as `agen nest run --join-token` enrols it
    async with served(hub) as url, Client.http(url, secret) as client:
        yield ClientHubPort(client)


async def state(hub: Hub, task_id: str) -> str:
    return str(await hub.store.scalar("SELECT state FROM tasks WHERE id = ?", (task_id,)))


@pytest.mark.parametrize("door", ["inproc", "http"])
async def test_the_in_process_and_the_http_hub_port_pass_the_same_sequence(
    tmp_path: Path, door: str
) -> None:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    hub = Hub(store)

    def seed(tx: Tx) -> tuple[str, str, str]:
        dep = add_deployment(tx, "d")
        digest = digest_files(FILES)
        def_id = put_definition(tx, "d", digest, FILES)
        tx.execute(
            "UPDATE deployments SET definition_id = ?, digest = ? WHERE id = ?",
            (def_id, digest, dep),
        )
        return dep, def_id, digest

    dep, def_id, digest = await store.write(seed)

    async def submit(text: str) -> str:
        row, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, text)))
        hub.work.notify()
        return row.id

    try:
        async with port_for(door, hub) as port:
            nest_id = await port.register("n1", 4, {"zone": "a"})
            await store.write(
                lambda tx: tx.execute(
                    "INSERT INTO assignments (deployment_id, nest_id, count, digest, leader_epoch, updated_ms)"
                    " VALUES (?,?,?,?,?,?)",
                    (dep, nest_id, 1, digest, 1, tx.now_ms),
                )
            )
            assignments = await port.report(
                nest_id, [InstanceReport(id="i1", deployment_id=dep, digest=digest, state="ready")]
            )
            assert [(a.deployment_id, a.count, a.definition_id) for a in assignments] == [
                (dep, 1, def_id)
            ]
            assert await port.definition_files(def_id) == FILES

            generation = await port.wait_for_work(-1, 0)
            waiter = asyncio.create_task(port.wait_for_work(generation, 30))
            one = await submit("one")
            assert await asyncio.wait_for(waiter, timeout=10) > generation  # woken, not timed out

            [leased] = await port.lease(nest_id, "i1", dep, 4, 30_000)
            assert (leased.id, leased.input, leased.started, leased.attempts) == (
                one,
                "one",
                True,
                1,
            )
            await port.mark_running(leased.ref)  # repeating it is harmless
            [extended] = await port.extend([leased.ref], 30_000)
            assert (extended.task_id, extended.status) == (one, "extended")
            assert extended.expires_ms is not None
            await port.report_progress(one, {"percent": 50})
            await port.complete(
                leased.ref, "succeeded", Outcome(status=OutcomeStatus.DONE, summary="ok")
            )
            assert await state(hub, one) == "succeeded"

            stale = LeaseRef(task_id=one, lease_id="not-the-lease")
            with pytest.raises(FencedError) as fenced:
                await port.complete(stale, "succeeded", None)
            assert fenced.value.code == "fenced" and "is no longer current" in str(fenced.value)
            assert fenced.value.details["lease_id"] == "not-the-lease"
            assert await port.extend([stale, leased.ref], 30_000) == [
                LeaseExtension(task_id=one, status="lost", detail="succeeded"),
                LeaseExtension(task_id=one, status="finished"),  # ended under this very lease
            ]
            with pytest.raises(NotFoundError):
                await port.release(
                    LeaseRef(task_id="no-such-task", lease_id="x"), count_attempt=False, reason="r"
                )

            two = await submit("two")
            [leased] = await port.lease(nest_id, "i1", dep, 4, 30_000)
            await port.release(leased.ref, count_attempt=False, reason="instance busy")
            assert await state(hub, two) == "queued"
            with pytest.raises(FencedError):  # the released lease is void
                await port.suspend(leased.ref, "child:x")

            [leased] = await port.lease(nest_id, "i1", dep, 4, 30_000)
            await port.suspend(leased.ref, "child:x")
            assert await state(hub, two) == "waiting"
            assert await port.lease(nest_id, "i1", dep, 4, 30_000) == []
    finally:
        await store.close()


async def test_a_nest_token_calls_only_the_nest_rpcs_and_who_am_i_and_a_viewer_none_of_them(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    hub = Hub(store)
    try:
        nest = Client.in_process(hub, LOCAL_NEST)
        who = await nest.call(r.WhoAmI, Empty())
        assert who.info.scopes == ["nest"]
        with pytest.raises(DeniedError):
            await nest.call(r.ListTasks, ListTasksRequest())
        viewer = Client.in_process(hub, Principal(id="v", name="v", scopes=frozenset({"viewer"})))
        lease = LeaseTasksRequest(
            nest_id="n", instance_id="i", deployment_id="d", limit=1, lease_ms=1000
        )
        with pytest.raises(DeniedError):
            await viewer.call(r.LeaseTasks, lease)
        with pytest.raises(NotFoundError):  # a Nest's credential: past the scope check
            await nest.call(r.LeaseTasks, lease)
        with pytest.raises(DeniedError, match=r"LeaseTasks is a Nest call.*agen join-token create"):
            await Client.in_process(hub).call(r.LeaseTasks, lease)  # admin implies no Nest call
    finally:
        await store.close()


async def test_extending_more_leases_than_one_call_carries_splits_them_and_reports_every_lost_one(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    try:
        port = ClientHubPort(Client.in_process(Hub(store), LOCAL_NEST))
        refs = [LeaseRef(task_id=f"t{i}", lease_id="l") for i in range(MAX_LEASES + 5)]
        assert await port.extend(refs, 30_000) == [
            LeaseExtension(task_id=ref.task_id, status="lost", detail="no such task")
            for ref in refs
        ]  # none of them is held
    finally:
        await store.close()


async def test_the_in_process_nest_acts_only_as_itself_once_registered(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    hub = Hub(store)
    try:
        mine = ClientHubPort(Client.in_process(hub, LOCAL_NEST))
        theirs = ClientHubPort(Client.in_process(hub, LOCAL_NEST))
        other_id = await theirs.register("other", 4, {})
        nest_id = await mine.register("local", 4, {})
        assert await mine.report(nest_id, []) == []
        with pytest.raises(DeniedError, match=f"belongs to nest {nest_id}; it cannot act for"):
            await mine.report(other_id, [])
        with pytest.raises(DeniedError, match=f"belongs to nest {nest_id}"):
            await mine.lease(other_id, "i1", "d", 1, 30_000)
        with pytest.raises(DeniedError, match=f"belongs to nest {nest_id}"):
            await mine.register("other", 4, {})  # nor take over another Nest's name
    finally:
        await store.close()
