"""Call tokens at the Gateway and the Hub (seed 000 §10), and agen-to-agen A2A delegation on the
real stack (LocalNode: Hub, leader, Nest, Runner, SQLite; the Gateway served by uvicorn on a
loopback port in the same loop): an operator's token from ResolveAgent, an agent's from
ResolveChildAgent, the callee check, expiry, bad signatures, lineage honoured only from agents and
checked against the Store, ``via: "a2a"`` by name, a url delegate to this Hub's Gateway, and A2A
calls counted towards maxFanOut."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from agen.api import registry as r
from agen.calltokens import CallIdentity, mint_call_token
from agen.client import Client
from agen.errors import DeniedError, NotFoundError
from agen.gateway import GatewayConfig, create_gateway_app
from agen.gateway.auth import KeyRing
from agen.gateway.wake import WakePolicy
from agen.hub.auth import LOCAL_NEST
from agen.hub.call_keys import agent_token, signing_key
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.util.listen import EmbeddedServer, tcp_listener
from agen.wire.agents import ResolveAgentRequest
from agen.wire.approvals import Approval, DecideApprovalRequest, ListApprovalsRequest
from agen.wire.common import Empty
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import (
    CancelTaskRequest,
    GetTaskRequest,
    GetTaskTreeRequest,
    ListTasksRequest,
    SubmitTaskRequest,
)
from agen.wire.tokens import CreateTokenRequest
from tests.fleet_helpers import files_b64
from tests.integration.test_a2a_gateway import _InProcessLink, _send
from tests.integration.test_delegation import Stack, call, finish


async def _keys(node: LocalNode) -> list[str]:
    resp = await Client.in_process(node.hub, LOCAL_NEST).call(r.GetTokenKeys, Empty())
    return [k.public_key for k in resp.keys]


class Gateway:
    """The Gateway app on a loopback port, reaching the node's Hub in process."""

    def __init__(self, node: LocalNode) -> None:
        self.node = node
        sock = tcp_listener("127.0.0.1", 0)
        self.sock = sock
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.keys = KeyRing(lambda: _keys(node))
        app = create_gateway_app(
            GatewayConfig(
                hub_url="http://hub.invalid", public_url=self.url, wake=WakePolicy(poll_s=0.02)
            ),
            link=_InProcessLink(node.hub),
            keys=self.keys,
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=5,  # a test that failed mid-call still ends
        )
        self.server = EmbeddedServer(config)  # no signal handlers of its own: pytest owns them

    async def __aenter__(self) -> Gateway:
        self.task = asyncio.create_task(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            assert not self.task.done(), "the Gateway did not start"
            await asyncio.sleep(0.01)
        self.node.hub.gateway_urls = [self.url]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        await self.task

    async def post(self, path: str, body: dict[str, Any], token: str | None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as http:
            return await http.post(path, json=body, headers=headers)


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    node = LocalNode(store, tick_s=0.05, heartbeat_s=0.05, capacity=8)
    await node.start()
    try:
        yield Stack(node, Client.in_process(node.hub), tmp_path)
    finally:
        await node.drain(5)
        await store.close()


async def _token(stack: Stack, scope: str) -> str:
    return (await stack.client.call(r.CreateToken, CreateTokenRequest(scopes=[scope]))).token


async def _resolve_as(stack: Stack, api_token: str, name: str) -> Any:
    principal = await stack.node.hub.auth.authenticate(api_token, stack.node.hub.clock())
    client = Client.in_process(stack.node.hub, principal)
    return await client.call(r.ResolveAgent, ResolveAgentRequest(deployment=name))


async def test_an_operators_resolved_token_calls_that_one_deployment_and_no_other(
    stack: Stack,
) -> None:
    await stack.deploy("helper")
    await stack.deploy("other")
    resolved = await _resolve_as(stack, await _token(stack, "operator"), "helper")
    token = resolved.call_token
    assert token and resolved.call_token_expires_ms - stack.node.hub.clock() <= 10 * 60_000
    assert (await _resolve_as(stack, await _token(stack, "viewer"), "helper")).call_token is None
    async with Gateway(stack.node) as gw:
        ok = await gw.post("/a2a/default/helper", _send("hi", "m1"), token)
        assert ok.status_code == 200, ok.text
        assert ok.json()["result"]["status"]["state"] == "completed"
        wrong = await gw.post("/a2a/default/other", _send("hi", "m2"), token)
        assert wrong.status_code == 403
        assert "it is for default/helper, not default/other" in wrong.json()["error"]["message"]
        card = await httpx.AsyncClient().get(
            f"{gw.url}/a2a/default/helper/.well-known/agent-card.json",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert card.status_code == 200 and card.json()["name"]
    # The task is the operator's: submitted by their API token, with its trust.
    row = await stack.store.one("SELECT submitted_by, trust FROM tasks WHERE deployment = 'helper'")
    assert row is not None and str(row["submitted_by"]).startswith("token:")
    assert row["trust"] == "trusted"  # the API token's (CreateToken's default)


async def test_expired_badly_signed_and_foreign_key_tokens_are_refused_with_401(
    stack: Stack,
) -> None:
    await stack.deploy("helper")
    now = stack.node.hub.clock()
    key = await signing_key(stack.store, now)
    who = CallIdentity(
        caller="agent:default/boss",
        callee="default/helper",
        issued_ms=now - 7_200_000,
        expires_ms=now - 3_600_000,
    )
    expired = mint_call_token(key.private, who)
    good = agent_token(
        key,
        namespace="default",
        deployment="boss",
        instance=None,
        depth=0,
        callee="default/helper",
        now_ms=now,
    )
    body, sig = good.split(".")[1:]
    tampered = f"agen-ct1.{body}.{sig[:-6]}AAAAAA"
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    foreign = mint_call_token(Ed25519PrivateKey.generate(), who)
    async with Gateway(stack.node) as gw:
        cases = {
            expired: "expired",
            tampered: "signature does not verify",
            foreign: "which this Hub does not publish",
            "agen-ct1.x": "not an agen call token",
        }
        for token, why in cases.items():
            resp = await gw.post("/a2a/default/helper", _send("hi", "m"), token)
            assert resp.status_code == 401, (why, resp.text)
            assert why in resp.json()["error"]["message"]
            assert resp.headers["www-authenticate"] == "Bearer"
        # One fetch: the foreign key id came within 10 s of it, so it did not fetch again.
        assert gw.keys.fetches == 1


async def test_a_call_token_reaches_only_its_callee_at_the_hub(stack: Stack) -> None:
    await stack.deploy("helper")
    await stack.deploy("other")
    other_task = await stack.submit("other")
    key = await signing_key(stack.store, stack.node.hub.clock())
    token = agent_token(
        key,
        namespace="default",
        deployment="boss",
        instance=None,
        depth=0,
        callee="default/helper",
        now_ms=stack.node.hub.clock(),
    )
    hub = stack.node.hub
    principal = await hub.auth.authenticate(token, hub.clock())
    as_agent = Client.in_process(hub, principal)
    with pytest.raises(DeniedError, match="a call token only calls its agent"):
        await as_agent.call(r.ListTasks, ListTasksRequest())
    with pytest.raises(NotFoundError):
        await as_agent.call(r.GetTask, GetTaskRequest(id=other_task))
    with pytest.raises(DeniedError, match="for default/helper, not default/other"):
        await as_agent.call(r.ResolveAgent, ResolveAgentRequest(deployment="other"))
    # Only into its own A2A conversations, and only its own tasks of the callee are there for it.
    theirs = SubmitTaskRequest(
        deployment="helper", input="x", conversation_key="api:someone", idempotency_key="k"
    )
    with pytest.raises(
        DeniedError, match="conversation_key must start with a2a:agent:default/boss:"
    ):
        await as_agent.call(r.SubmitTask, theirs)
    with pytest.raises(DeniedError, match="for default/helper, not default/other"):
        await as_agent.call(r.SubmitTask, SubmitTaskRequest(deployment="other", input="x"))
    someone_elses = await stack.submit("helper")
    with pytest.raises(NotFoundError):
        await as_agent.call(r.GetTask, GetTaskRequest(id=someone_elses))
    with pytest.raises(NotFoundError):
        await as_agent.call(r.CancelTask, CancelTaskRequest(id=someone_elses))
    mine = SubmitTaskRequest(
        deployment="helper",
        input="x",
        conversation_key="a2a:agent:default/boss:c1",
        idempotency_key="a2a:agent:default/boss:msg:1",
    )
    task = (await as_agent.call(r.SubmitTask, mine)).task
    assert (await as_agent.call(r.GetTask, GetTaskRequest(id=task.id))).task.id == task.id


async def test_lineage_is_honoured_from_an_agent_token_checked_against_the_store_and_ignored_otherwise(
    stack: Stack,
) -> None:
    await stack.deploy("boss", [finish("done")])
    await stack.deploy("helper")
    boss = await stack.submit("boss")
    await stack.wait(boss)
    boss_run = await stack.store.one("SELECT id, root_run_id FROM runs WHERE task_id = ?", (boss,))
    assert boss_run is not None
    now = stack.node.hub.clock()
    key = await signing_key(stack.store, now)

    def token_of(caller: str) -> str:
        return agent_token(
            key,
            namespace="default",
            deployment=caller,
            instance=None,
            depth=0,
            callee="default/helper",
            now_ms=now,
        )

    claim = {"agen.parent_run_id": boss_run["id"], "agen.depth": 0, "agen.root_run_id": "x"}
    operator = await _token(stack, "operator")
    async with Gateway(stack.node) as gw:
        ok = await gw.post("/a2a/default/helper", _send("a", "m1", meta=claim), token_of("boss"))
        assert ok.status_code == 200, ok.text
        stolen = await gw.post(
            "/a2a/default/helper", _send("b", "m2", meta=claim), token_of("mallory")
        )
        ignored = await gw.post("/a2a/default/helper", _send("c", "m3", meta=claim), operator)
    task = await stack.client.call(r.GetTask, GetTaskRequest(id=ok.json()["result"]["id"]))
    run = await stack.store.one(
        "SELECT parent_run_id, root_run_id FROM runs WHERE task_id = ?", (task.task.id,)
    )
    # Root and depth come from the parent run, not from the claim.
    assert run == {"parent_run_id": boss_run["id"], "root_run_id": boss_run["root_run_id"]}
    depth = await stack.store.scalar("SELECT depth FROM tasks WHERE id = ?", (task.task.id,))
    assert depth == 1
    # Another deployment's run is not this caller's to attach to.
    assert stolen.status_code == 403
    assert "not a run of the calling deployment default/mallory" in stolen.text
    # An operator's call starts a new tree: the claim is ignored.
    assert ignored.status_code == 200, ignored.text
    other = await stack.store.one(
        "SELECT t.depth, t.parent_run_id FROM tasks t WHERE t.id = ?",
        (ignored.json()["result"]["id"],),
    )
    assert other == {"depth": 0, "parent_run_id": None}


async def test_a_bundle_calls_another_deployment_over_a2a_by_name_and_by_its_gateway_url(
    stack: Stack,
) -> None:
    async with Gateway(stack.node) as gw:
        await stack.deploy("helper")  # the echo model: "You said: <input>"
        await stack.deploy(
            "boss",
            [
                call("call_agent", agent="helper", input="by name"),
                call("call_agent", agent="helper-url", input="by url"),
                finish("done"),
            ],
            delegates=[
                {"name": "helper", "via": "a2a"},
                {"name": "helper-url", "url": f"{gw.url}/a2a/default/helper"},
            ],
        )
        boss = await stack.submit("boss")
        assert (await stack.wait(boss)).state == "succeeded"
    results = [m for m in await stack.tool_results(boss) if m["name"] == "call_agent"]
    assert [(m["content"], m["is_error"]) for m in results] == [
        ("You said: by name", 0),
        ("You said: by url", 0),
    ]
    boss_run = await stack.store.one("SELECT id, root_run_id FROM runs WHERE task_id = ?", (boss,))
    assert boss_run is not None
    helpers = await stack.store.all(
        "SELECT t.depth, t.parent_run_id, t.parent_task_id, t.root_task_id, t.submitted_by, t.trust"
        " FROM tasks t WHERE t.deployment = 'helper' ORDER BY t.seq"
    )
    boss_trust = await stack.store.scalar("SELECT trust FROM tasks WHERE id = ?", (boss,))
    assert len(helpers) == 2
    for h in helpers:  # A2A tasks in boss's tree (lineage from its agent token): its children
        assert (h["depth"], h["parent_run_id"]) == (1, boss_run["id"])
        assert (h["parent_task_id"], h["root_task_id"]) == (boss, boss)
        assert h["submitted_by"] == "agent:default/boss"
        assert h["trust"] == boss_trust  # the token carries the caller's trust, never more
    tree = await stack.client.call(r.GetTaskTree, GetTaskTreeRequest(id=boss))
    assert [n.task.deployment for n in tree.tasks] == ["boss", "helper", "helper"]  # agen tree
    # In boss's tree, their runs' requester is boss's run's (its submitter), not the calling agent.
    requesters = await stack.store.all(
        "SELECT r.requested_by FROM runs r JOIN tasks t ON t.id = r.task_id"
        " WHERE t.deployment IN ('boss', 'helper')"
    )
    assert [x["requested_by"] for x in requesters] == ["local-admin"] * 3
    counted = await stack.store.scalar(
        "SELECT COUNT(*) FROM delegation_calls WHERE root_run_id = ? AND call_key LIKE 'a2a:%'",
        (boss_run["root_run_id"],),
    )
    assert counted == 2


async def test_a2a_calls_count_towards_max_fan_out_with_child_tasks(stack: Stack) -> None:
    """maxFanOut 2: an A2A call and a child task take both slots, so a second A2A call is refused;
    two A2A calls take both, so a child task is refused. Refusals are tool errors the model reads."""
    async with Gateway(stack.node):
        await stack.deploy("helper")
        await stack.deploy("local")
        delegates = [{"name": "helper", "via": "a2a"}, {"name": "local"}]
        await stack.deploy(
            "mixed",
            [
                call("call_agent", agent="helper", input="one"),
                call("call_agent", agent="local", input="two"),
                call("call_agent", agent="helper", input="three"),
                finish("done"),
            ],
            delegates=delegates,
            limits={"maxFanOut": 2},
        )
        await stack.deploy(
            "remote-first",
            [
                call("call_agent", agent="helper", input="one"),
                call("call_agent", agent="helper", input="two"),
                call("call_agent", agent="local", input="three"),
                finish("done"),
            ],
            delegates=delegates,
            limits={"maxFanOut": 2},
        )
        mixed = await stack.submit("mixed")
        remote_first = await stack.submit("remote-first")
        assert (await stack.wait(mixed)).state == "succeeded"
        assert (await stack.wait(remote_first)).state == "succeeded"
    for task in (mixed, remote_first):
        results = [m for m in await stack.tool_results(task) if m["name"] == "call_agent"]
        assert [m["is_error"] for m in results] == [0, 0, 1]
        assert results[0]["content"] == "You said: one"
        assert (
            "already started 2 child tasks and A2A calls, limits.maxFanOut 2"
            in (results[2]["content"])
        )
    children = await stack.store.scalar("SELECT COUNT(*) FROM tasks WHERE deployment = 'local'")
    assert children == 1  # mixed's; remote-first's was refused


async def test_a_run_started_over_a2a_with_a_users_token_names_them_as_requester_down_its_tree(
    stack: Stack,
) -> None:
    """Seed 000 §10: the user behind the call token is the run's requester (runs.requested_by); a
    delegated run inherits its root run's requester; the approvals name that user, who cannot
    approve them (another approver can)."""
    from tests.integration.test_durable_approvals import gated_bundle

    gated = gated_bundle(stack.root / "gated", stack.root / "effects.log")
    await stack.client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(gated)))
    await stack.deploy(
        "boss",
        [call("call_agent", agent="gated", input="the gated part"), finish("done")],
        delegates=[{"name": "gated"}],
    )
    alice = await stack.client.call(
        r.CreateToken, CreateTokenRequest(scopes=["operator", "approver"], name="alice")
    )
    bob = await _token(stack, "approver")
    hub = stack.node.hub

    async def as_(secret: str) -> Client:
        return Client.in_process(hub, await hub.auth.authenticate(secret, hub.clock()))

    async def pending() -> list[Approval]:
        listed = await stack.client.call(r.ListApprovals, ListApprovalsRequest())
        return [a for a in listed.approvals if a.state == "pending"]

    resolved = await _resolve_as(stack, alice.token, "boss")
    async with Gateway(stack.node) as gw:
        sent = asyncio.create_task(
            gw.post("/a2a/default/boss", _send("go", "m1"), resolved.call_token)
        )
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while not (waiting := await pending()):
                assert loop.time() < deadline and not sent.done(), "no approval was asked for"
                await asyncio.sleep(0.05)
            [approval] = waiting
            assert approval.deployment == "gated"  # asked by the delegated run
            assert approval.requested_by == f"token:{alice.info.id}"
            with pytest.raises(DeniedError, match="cannot approve it"):
                await (await as_(alice.token)).call(
                    r.DecideApproval, DecideApprovalRequest(id=approval.id, approve=True)
                )
            await (await as_(bob)).call(
                r.DecideApproval, DecideApprovalRequest(id=approval.id, approve=True)
            )
            answer = await asyncio.wait_for(sent, 60)
        finally:
            sent.cancel()  # a failed check must not leave the call holding the Gateway open
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["status"]["state"] == "completed"
    runs = await stack.store.all(
        "SELECT t.deployment, t.submitted_by, r.requested_by FROM runs r"
        " JOIN tasks t ON t.id = r.task_id ORDER BY r.started_ms"
    )
    assert [(x["deployment"], x["requested_by"]) for x in runs] == [
        ("boss", f"token:{alice.info.id}"),
        ("gated", f"token:{alice.info.id}"),
    ]
    assert runs[1]["submitted_by"] != runs[1]["requested_by"]  # the child was submitted by the Nest
