"""Approval waits are durable: the task suspends (no lease, no slot), survives a restart of the Hub and
Nest, and resumes its run on the decision; cancelling closes its approvals; the self-approval rule."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.errors import ConflictError, DeniedError
from agen.hub.auth import Principal, insert_token
from agen.node import LocalNode
from agen.store import SQLiteStore, Store
from agen.wire.approvals import Approval, DecideApprovalRequest, ListApprovalsRequest
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.feedback import ListFeedbackRequest
from agen.wire.tasks import CancelTaskRequest, GetTaskRequest, SubmitTaskRequest, Task
from tests.fleet_helpers import files_b64, write_bundle
from tests.observe_helpers import TEST_SERVER


def gated_bundle(root: Path, log: Path) -> Path:
    """Turn 1: t.append (a side effect, counted in ``log``) behind an ask; turn 2: an answer."""
    script: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "t_append", "arguments": {"path": str(log), "line": "ran"}}]},
        {"text": "finished"},
    ]
    config = {
        "kind": "pool",
        "scale": {"min": 1, "max": 1, "maxConcurrency": 2},
        "permissions": {"ask": ["t.append"], "default": "allow"},
    }
    # the server runs in the sandbox: it may write the log's folder
    sandbox = {"filesystem": {"write": [str(log.parent)]}}
    bundle = write_bundle(root, "gated", script=script, config=config, sandbox=sandbox)
    (bundle / "mcp.json").write_text(
        json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": [TEST_SERVER]}}})
    )
    return bundle


@asynccontextmanager
async def node_on(db: Path) -> AsyncIterator[LocalNode]:
    """One Hub + local Nest on the store file; leaving the block drains it like `agen down`."""
    store = await SQLiteStore.open(db)
    node = LocalNode(store, tick_s=0.2, heartbeat_s=0.2)
    await node.start()
    try:
        yield node
    finally:
        await node.drain(5)
        await store.close()


async def until(check: Any, what: str, timeout_s: float = 30) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def suspended(store: Store, task_id: str) -> dict[str, Any]:
    """The task waits for its approval with no lease (and so no instance slot)."""

    async def check() -> dict[str, Any] | None:
        row = await store.one("SELECT * FROM tasks WHERE id = ?", (task_id,))
        return row if row is not None and row["state"] == "waiting" else None

    return dict(await until(check, f"task {task_id} to suspend on its approval"))


async def pending_of(client: Client, task_id: str) -> Approval:
    async def check() -> list[Approval]:
        return [
            a
            for a in (await client.call(r.ListApprovals, ListApprovalsRequest())).approvals
            if a.task_id == task_id
        ]

    [approval] = await until(check, "the pending approval")
    assert isinstance(approval, Approval)
    return approval


async def submit(client: Client, text: str = "go") -> Task:
    return (await client.call(r.SubmitTask, SubmitTaskRequest(deployment="gated", input=text))).task


async def wait(client: Client, task_id: str) -> Task:
    return (await client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=60))).task


async def test_an_approval_wait_holds_no_slot_survives_a_restart_and_the_approved_call_runs_once(
    tmp_path: Path,
) -> None:
    log, db = tmp_path / "effects.log", tmp_path / "hub.db"
    async with node_on(db) as node:
        client = Client.in_process(node.hub)
        await client.call(
            r.CreateDeployment,
            CreateDeploymentRequest(files=files_b64(gated_bundle(tmp_path / "b", log))),
        )
        tasks = [
            await submit(client, f"go {i}") for i in range(3)
        ]  # more than the instance's 2 slots
        for t in tasks:
            row = await suspended(node.store, t.id)
            assert row["wait_for"].startswith("approval:") and row["lease_id"] is None

        async def idle() -> bool:
            return node.hub.in_flight() == 0

        await until(idle, "every instance slot to be free while the three tasks wait")
        approvals = {t.id: await pending_of(client, t.id) for t in tasks}
    assert not log.exists()

    async with node_on(db) as node:  # a new process on the same store
        client = Client.in_process(node.hub)
        first, second, third = tasks
        await client.call(
            r.DecideApproval, DecideApprovalRequest(id=approvals[first.id].id, approve=True)
        )
        await client.call(
            r.DecideApproval,
            DecideApprovalRequest(id=approvals[second.id].id, approve=False, note="not today"),
        )
        done = await wait(client, first.id)
        assert done.state == "succeeded" and (done.outcome or {}).get("summary") == "finished"
        assert log.read_text() == "ran\n"
        denied = await wait(client, second.id)
        assert denied.state == "succeeded"
        assert log.read_text() == "ran\n"
        told = await node.store.scalar(
            "SELECT m.content FROM messages m JOIN runs ru ON ru.id = m.run_id WHERE ru.task_id = ? AND m.role = 'tool'",
            (second.id,),
        )
        assert told == "denied by the approver: not today"
        # each decision is feedback on the run too (seed 000: by "approval", 1.0 / 0.0)
        rated = await client.call(r.ListFeedback, ListFeedbackRequest())
        assert sorted((f.task_id, f.score, f.note, f.by) for f in rated.feedback) == sorted(
            [(first.id, 1.0, None, "approval"), (second.id, 0.0, "not today", "approval")]
        )
        assert {f.labels["approval"] for f in rated.feedback} == {
            approvals[first.id].id,
            approvals[second.id].id,
        }
        # one run per task, resumed (not restarted): its first user message is stored once
        for t in (first, second):
            assert (
                await node.store.scalar("SELECT COUNT(*) FROM runs WHERE task_id = ?", (t.id,)) == 1
            )
            assert (
                await node.store.scalar(
                    "SELECT COUNT(*) FROM messages m JOIN runs ru ON ru.id = m.run_id WHERE ru.task_id = ?"
                    " AND m.role = 'user'",
                    (t.id,),
                )
                == 1
            )
        assert (await node.store.one("SELECT state FROM tasks WHERE id = ?", (third.id,)) or {})[
            "state"
        ] == "waiting"


async def test_time_spent_waiting_for_a_person_does_not_count_against_the_runs_max_duration(
    tmp_path: Path,
) -> None:
    log = tmp_path / "effects.log"
    async with node_on(tmp_path / "hub.db") as node:
        client = Client.in_process(node.hub)
        await client.call(
            r.CreateDeployment,
            CreateDeploymentRequest(files=files_b64(gated_bundle(tmp_path / "b", log))),
        )
        task = await submit(client)
        await suspended(node.store, task.id)
        approval = await pending_of(client, task.id)
        two_hours = 2 * 3_600_000  # the approver answers two hours later (maxRunDuration is 30m)
        await node.store.write(
            lambda tx: (
                tx.execute(
                    "UPDATE runs SET started_ms = started_ms - ? WHERE task_id = ?",
                    (two_hours, task.id),
                ),
                tx.execute(
                    "UPDATE approvals SET created_ms = created_ms - ? WHERE id = ?",
                    (two_hours, approval.id),
                ),
            )
        )
        await client.call(r.DecideApproval, DecideApprovalRequest(id=approval.id, approve=True))
        done = await wait(client, task.id)
        assert done.state == "succeeded" and (done.outcome or {}).get("status") == "done", (
            done.outcome
        )
        assert log.read_text() == "ran\n"


async def test_a_run_that_waited_for_its_approval_reads_suspended_in_its_trace_not_interrupted(
    tmp_path: Path,
) -> None:
    from rich.console import Console

    from agen.render.observe import trace_tree
    from agen.wire.observe import GetTraceRequest

    async with node_on(tmp_path / "hub.db") as node:
        client = Client.in_process(node.hub)
        bundle = gated_bundle(tmp_path / "b", tmp_path / "effects.log")
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        task = await submit(client)
        await suspended(node.store, task.id)
        approval = await pending_of(client, task.id)
        await client.call(r.DecideApproval, DecideApprovalRequest(id=approval.id, approve=True))
        assert (await wait(client, task.id)).state == "succeeded"
        spans = await node.store.all(
            "SELECT status, attrs FROM spans WHERE task_id = ? AND name = 'agen.run'"
            " ORDER BY started_ms",
            (task.id,),
        )
        assert [s["status"] for s in spans] == ["ok", "ok"]
        assert json.loads(spans[0]["attrs"])["agen.suspended"] == f"approval:{approval.id}"
        trace = await client.call(r.GetTrace, GetTraceRequest(id=task.id))
    drawn = Console(width=200, record=True)
    drawn.print(trace_tree(trace))
    text = drawn.export_text()
    assert "suspended" in text and "interrupted" not in text


async def test_cancelling_a_waiting_task_closes_its_approval_and_deciding_it_is_a_conflict(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    log = tmp_path / "effects.log"
    async with node_on(tmp_path / "hub.db") as node:
        client = Client.in_process(node.hub)
        await client.call(
            r.CreateDeployment,
            CreateDeploymentRequest(files=files_b64(gated_bundle(tmp_path / "b", log))),
        )
        task = await submit(client)
        await suspended(node.store, task.id)
        approval = await pending_of(client, task.id)
        await client.call(r.CancelTask, CancelTaskRequest(id=task.id, reason="changed my mind"))
        assert (await wait(client, task.id)).state == "cancelled"
        assert (await client.call(r.ListApprovals, ListApprovalsRequest())).approvals == []
        [closed] = (await client.call(r.ListApprovals, ListApprovalsRequest(all=True))).approvals
        assert closed.state == "cancelled" and f"task {task.id} was cancelled" in (
            closed.note or ""
        )
        with pytest.raises(ConflictError, match=r"closed because its task \w+ was cancelled"):
            await client.call(r.DecideApproval, DecideApprovalRequest(id=approval.id, approve=True))
    assert not log.exists()
    assert not [rec for rec in caplog.records if rec.exc_info or "Fenced" in rec.getMessage()]


async def token(node: LocalNode, name: str) -> Principal:
    """A second, non-local API token with operator and approver scopes, as the Hub authenticates it."""
    _, secret = await node.store.write(
        lambda tx: insert_token(tx, scopes=["operator", "approver"], name=name)
    )
    return await node.hub.auth.authenticate(secret, node.hub.clock())


async def test_a_token_cannot_approve_its_own_task_unless_allowed_but_the_local_admin_and_others_can(
    tmp_path: Path,
) -> None:
    log = tmp_path / "effects.log"
    async with node_on(tmp_path / "hub.db") as node:
        admin = Client.in_process(node.hub)
        await admin.call(
            r.CreateDeployment,
            CreateDeploymentRequest(files=files_b64(gated_bundle(tmp_path / "b", log))),
        )
        alice, bob = await token(node, "alice"), await token(node, "bob")
        as_alice, as_bob = Client.in_process(node.hub, alice), Client.in_process(node.hub, bob)

        mine = await submit(as_alice, "one")
        approval = await pending_of(admin, mine.id)
        who = f"token:{alice.id}"
        assert approval.requested_by == who
        assert (
            await node.store.scalar("SELECT submitted_by FROM tasks WHERE id = ?", (mine.id,))
            == who
        )
        assert (
            await node.store.scalar("SELECT requested_by FROM runs WHERE task_id = ?", (mine.id,))
            == who
        )
        with pytest.raises(DeniedError, match="cannot approve it") as refused:
            await as_alice.call(
                r.DecideApproval, DecideApprovalRequest(id=approval.id, approve=True)
            )
        assert refused.value.http_status == 403
        decided = await as_bob.call(
            r.DecideApproval, DecideApprovalRequest(id=approval.id, approve=True)
        )
        assert decided.approval.decided_by == f"token:{bob.id}"

        node.hub.allow_self_approval = True  # `agen up --allow-self-approval`
        again = await pending_of(admin, (await submit(as_alice, "two")).id)
        assert (
            await as_alice.call(r.DecideApproval, DecideApprovalRequest(id=again.id, approve=True))
        ).approval.state == "approved"
        node.hub.allow_self_approval = False

        own = await pending_of(
            admin, (await submit(admin, "three")).id
        )  # the local admin's own work
        assert own.requested_by == "local-admin"
        assert (
            await admin.call(r.DecideApproval, DecideApprovalRequest(id=own.id, approve=True))
        ).approval.state == "approved"


async def test_a_bundles_permissions_notify_url_receives_each_new_pending_approval(
    tmp_path: Path,
) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from agen.testing.server import ThreadServer

    received: list[dict[str, Any]] = []

    async def hook(request: Request) -> Response:
        received.append(json.loads(await request.body()))
        return Response(status_code=204)

    async with ThreadServer(Starlette(routes=[Route("/approvals", hook, methods=["POST"])])) as srv:
        bundle = gated_bundle(tmp_path / "b", tmp_path / "effects.log")
        config = json.loads((bundle / "x-agen" / "config.json").read_text())
        config["permissions"]["notify"] = f"{srv.url}/approvals"
        (bundle / "x-agen" / "config.json").write_text(json.dumps(config))
        async with node_on(tmp_path / "hub.db") as node:
            client = Client.in_process(node.hub)
            await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
            task = await submit(client)
            approval = await pending_of(client, task.id)

            async def delivered() -> list[dict[str, Any]]:
                return [e for e in received if e["type"] == "approval.requested"]

            [event] = await until(delivered, "the approval request at the bundle's notify URL")
    assert event["data"]["approvalId"] == approval.id and event["task_id"] == task.id
    assert event["data"]["tool"] == "t.append" and event["deployment"] == "gated"
    assert [e["type"] for e in received] == ["approval.requested"]  # only approval requests
