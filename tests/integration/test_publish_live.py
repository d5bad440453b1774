"""PublishLive (agen.hub.rpc.live): a Nest's live events reach the Hub's bus only for the runs it runs.
Events of a task another Nest holds, of an unknown task, naming another namespace than their task's,
or naming no task are refused per task with the reason, and the rest of the batch is published; a run's
last events, trailing its task's end, still pass from the Nest that ran it. Bad input is a 4xx over
HTTP, never a 5xx."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from agen.api import registry as r
from agen.api.app import create_app
from agen.client import Client
from agen.domain.live import LiveBus, LiveEvent
from agen.hub.service import Hub
from agen.store import now_ms
from agen.testing.server import ThreadServer
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.nests import (
    CreateJoinTokenRequest,
    EnrolNestRequest,
    LiveEventWire,
    PublishLiveRequest,
)
from agen.wire.tasks import SubmitTaskRequest
from agen.wire.tokens import CreateTokenRequest
from tests.fleet_helpers import files_b64, write_bundle


async def _enrolled(hub: Hub, admin: Client, name: str) -> tuple[str, str]:
    join = await admin.call(r.CreateJoinToken, CreateJoinTokenRequest())
    joiner = Client.in_process(hub, await hub.auth.authenticate(join.token, now_ms()))
    resp = await joiner.call(r.EnrolNest, EnrolNestRequest(name=name))
    return resp.nest_id, resp.token


async def _as(hub: Hub, token: str) -> Client:
    return Client.in_process(hub, await hub.auth.authenticate(token, now_ms()))


def event(task: str | None, text: str, ns: str = "default", dep: str = "worker") -> LiveEventWire:
    e = LiveEvent("run.delta", ns, dep, "run-1", task, {"turn": 1, "text": text, "kind": "text"}, 1)
    return LiveEventWire.of(e)


async def test_a_nest_publishes_live_events_of_its_own_runs_only(hub: Hub, tmp_path: Path) -> None:
    hub.live = LiveBus()
    admin = Client.in_process(hub)
    bundle = write_bundle(tmp_path / "worker", "worker", config={"kind": "pool"})
    dep = (
        await admin.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
    ).deployment
    assert dep is not None
    task = (await admin.call(r.SubmitTask, SubmitTaskRequest(deployment="worker", input="x"))).task
    a_id, a_token = await _enrolled(hub, admin, "a")
    b_id, b_token = await _enrolled(hub, admin, "b")
    a, b = await _as(hub, a_token), await _as(hub, b_token)
    await hub.store.write(  # nest a leased the task (as LeaseTasks leaves it)
        lambda tx: tx.execute(
            "UPDATE tasks SET state = 'running', lease_id = 'L1', lease_nest_id = ? WHERE id = ?",
            (a_id, task.id),
        )
    )
    with hub.live.subscribe(lambda e: True) as sub:
        # the Nest holding the lease: published, in order
        ok = await a.call(
            r.PublishLive, PublishLiveRequest(events=[event(task.id, "Hel"), event(task.id, "lo")])
        )
        assert ok.published == 2 and ok.refused == []
        got = [sub.queue.get_nowait() for _ in range(2)]
        assert [e.data["text"] for e in got] == ["Hel", "lo"] and got[0].task_id == task.id

        # another Nest: refused, with who holds the task; nothing reaches the bus
        no = await b.call(r.PublishLive, PublishLiveRequest(events=[event(task.id, "spoof")] * 3))
        assert no.published == 0 and len(no.refused) == 1
        assert no.refused[0].events == 3 and no.refused[0].task_id == task.id
        assert f"leased by nest {a_id}, not {b_id}" in no.refused[0].reason
        assert sub.queue.empty()

        # a mixed batch: each bad task refused with its reason, the rest published
        mixed = await a.call(
            r.PublishLive,
            PublishLiveRequest(
                events=[
                    event(task.id, "good"),
                    event("01UNKNOWNTASK", "x"),
                    event(task.id, "x", ns="other"),
                    event(None, "x"),
                ]
            ),
        )
        assert mixed.published == 1
        reasons = {x.task_id: x.reason for x in mixed.refused}
        assert "not known to this Hub" in reasons["01UNKNOWNTASK"]
        assert "names none" in reasons[None]
        assert "is of default/worker, not other/worker" in reasons[task.id]
        assert sub.queue.get_nowait().data["text"] == "good" and sub.queue.empty()

        # the task ended (no Nest holds it): its run's last events still pass from a Nest the
        # deployment is assigned to or runs on, not from one it never was
        await hub.store.write(
            lambda tx: (
                tx.execute(
                    "UPDATE tasks SET state = 'succeeded', lease_nest_id = NULL WHERE id = ?",
                    (task.id,),
                ),
                tx.execute(
                    "INSERT INTO instances (id, nest_id, deployment_id, digest, state, started_ms,"
                    " updated_ms) VALUES ('i1', ?, ?, 'd', 'ready', 0, 0)",
                    (a_id, dep.id),
                ),
            )
        )
        late = await a.call(r.PublishLive, PublishLiveRequest(events=[event(task.id, "last")]))
        assert late.published == 1 and sub.queue.get_nowait().data["text"] == "last"
        stranger = await b.call(r.PublishLive, PublishLiveRequest(events=[event(task.id, "x")]))
        assert stranger.published == 0
        reason = stranger.refused[0].reason
        assert f"default/worker is neither assigned to nest {b_id} nor run there" == reason
        assert sub.queue.empty()

    # over HTTP: a bad batch is a 400 naming the problem, a user's token a 403, never a 5xx
    user_token = (
        await admin.call(r.CreateToken, CreateTokenRequest(scopes=["admin"], name="person"))
    ).token
    async with ThreadServer(create_app(hub)) as srv:
        url = f"{srv.url}/v1/PublishLive"
        nest = {"Authorization": f"Bearer {a_token}"}
        async with httpx.AsyncClient(timeout=30) as http:
            bodies: list[dict[str, Any]] = [
                {"events": [{"type": "run.secret"}]},
                {"events": [event(task.id, "x").model_dump() | {"created_ms": -1}]},
                {"events": [event(task.id, "x").model_dump()] * 513},
                {"events": "nope"},
                {"evnts": []},
            ]
            for body in bodies:
                resp = await http.post(url, json=body, headers=nest)
                assert resp.status_code == 400, (body, resp.text)
                assert resp.json()["error"]["code"] == "invalid"
            person = {"Authorization": f"Bearer {user_token}"}
            resp = await http.post(url, json={"events": []}, headers=person)
            assert resp.status_code == 403 and "nest" in resp.json()["error"]["message"]
            resp = await http.post(url, content=b"{not json", headers=nest)
            assert resp.status_code == 400
            ok_resp = await http.post(
                url, json={"events": [event(task.id, "x").model_dump()]}, headers=nest
            )
            assert ok_resp.status_code == 200 and ok_resp.json()["published"] == 1
