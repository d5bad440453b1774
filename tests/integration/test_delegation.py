"""Delegation on the real stack in one process (LocalNode: Hub, leader, Nest, Runner, SQLite):
call_agent, joined and detached start_agent, limits, query/signal, locks, lineage, overrides."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import GetTaskRequest, ListTasksRequest, SubmitTaskRequest, Task
from tests.fleet_helpers import files_b64, write_bundle


def call(tool: str, /, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": args}]}


def calls(*cs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in cs]}


def finish(summary: str, **extra: Any) -> dict[str, Any]:
    return call("finish", summary=summary, **extra)


class Stack:
    def __init__(self, node: LocalNode, client: Client, root: Path) -> None:
        self.node, self.client, self.root, self.store = node, client, root, node.store

    async def deploy(
        self,
        name: str,
        script: list[dict[str, Any]] | None = None,
        *,
        delegates: list[dict[str, Any]] | None = None,
        limits: dict[str, Any] | None = None,
        scale_max: int = 4,
        permissions: dict[str, Any] | None = None,
    ) -> list[str]:
        """``permissions`` default to allowing every tool: delegating asks by default, as any tool
        with an effect does, and these tests are about what delegation does once allowed."""
        config: dict[str, Any] = {
            "kind": "pool",
            "scale": {"min": 0, "max": scale_max},
            "permissions": permissions or {"default": "allow"},
        }
        if delegates is not None:
            config["delegates"] = delegates
        if limits:
            config["limits"] = limits
        bundle = write_bundle(self.root / name, name, script=script, config=config)
        resp = await self.client.call(
            r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle))
        )
        return list(resp.warnings)

    async def submit(self, deployment: str, text: str = "go", **kw: Any) -> str:
        resp = await self.client.call(
            r.SubmitTask, SubmitTaskRequest(deployment=deployment, input=text, **kw)
        )
        return resp.task.id

    async def wait(self, task_id: str, timeout_s: float = 60) -> Task:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            t = (await self.client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=5))).task
            if t.state in ("succeeded", "failed", "cancelled", "expired"):
                return t
            assert loop.time() < deadline, f"task {task_id} still {t.state} ({t.wait_for})"

    async def tasks(self) -> list[Task]:
        return list((await self.client.call(r.ListTasks, ListTasksRequest(limit=1000))).tasks)

    async def tool_results(self, task_id: str) -> list[dict[str, Any]]:
        return await self.store.all(
            "SELECT m.name, m.content, m.is_error FROM messages m JOIN runs r ON r.id = m.run_id"
            " WHERE r.task_id = ? AND m.role = 'tool' ORDER BY m.seq",
            (task_id,),
        )


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


async def test_call_agent_returns_the_childs_outcome_as_the_tool_result(stack: Stack) -> None:
    await stack.deploy(
        "helper",
        [
            call(
                "finish",
                summary="found 3 papers",
                status="partial",
                reason="max_turns",
                data={"n": 3},
            )
        ],
    )
    await stack.deploy(
        "boss",
        [call("call_agent", agent="helper", input="find papers"), finish("done")],
        delegates=[{"name": "helper", "description": "finds things"}],
    )
    boss = await stack.submit("boss", labels={"team": "r"})
    assert (await stack.wait(boss)).state == "succeeded"
    [result] = [m for m in await stack.tool_results(boss) if m["name"] == "call_agent"]
    assert result["content"].startswith("[partial: max_turns] found 3 papers")
    assert '"n": 3' in result["content"]
    [child] = [t for t in await stack.tasks() if t.deployment == "helper"]
    assert child.parent_task_id == boss and child.root_task_id == boss and child.depth == 1
    assert child.labels == {"team": "r"}
    run = await stack.store.one(
        "SELECT id, root_run_id, trace_id FROM runs WHERE task_id = ?", (boss,)
    )
    crow = await stack.store.one(
        "SELECT parent_run_id, root_run_id, trace_id FROM runs WHERE task_id = ?", (child.id,)
    )
    assert run is not None and crow is not None
    assert child.parent_run_id == run["id"] and child.root_run_id == run["root_run_id"]
    assert crow["parent_run_id"] == run["id"] and crow["trace_id"] == run["trace_id"]
    parent_span = await stack.store.one(
        "SELECT p.name, p.run_id, p.attrs FROM spans s JOIN spans p ON p.id = s.parent_id"
        " WHERE s.task_id = ? AND s.name = 'agen.run'",
        (child.id,),
    )  # the child's run hangs under the caller's call_agent span: one trace across agents
    assert parent_span is not None and parent_span["name"] == "agen.tool"
    assert parent_span["run_id"] == run["id"] and '"call_agent"' in parent_span["attrs"]


async def test_joined_children_suspend_the_parent_and_their_results_reach_it(stack: Stack) -> None:
    await stack.deploy("worker", None)  # echo: "You said: <input>"
    await stack.deploy(
        "lead",
        [
            calls(
                ("start_agent", {"agent": "worker", "input": "a"}),
                ("start_agent", {"agent": "worker", "input": "b"}),
                ("finish", {"summary": "too early"}),
            ),
            finish("all in"),
        ],
        delegates=[{"name": "worker"}],
    )
    lead = await stack.submit("lead")
    done = await stack.wait(lead)
    assert done.state == "succeeded" and done.outcome and done.outcome["summary"] == "all in"
    results = await stack.tool_results(lead)
    refused = [m for m in results if m["name"] == "finish"]
    assert refused[0]["is_error"] and "wait for" in refused[0]["content"]
    notes = await stack.store.all(
        "SELECT m.content FROM messages m JOIN runs r ON r.id = m.run_id WHERE r.task_id = ?"
        " AND m.role = 'user' AND m.content LIKE '[Child task %'",
        (lead,),
    )
    assert sorted(n["content"].split("] ", 1)[1] for n in notes) == ["You said: a", "You said: b"]
    waited = await stack.store.scalar(
        "SELECT COUNT(*) FROM events WHERE task_id = ? AND type = 'task.waiting'", (lead,)
    )
    assert waited >= 1


async def test_a_parent_waiting_on_twenty_children_holds_no_slot(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    node = LocalNode(store, tick_s=0.05, heartbeat_s=0.05, capacity=2)
    await node.start()
    try:
        s = Stack(node, Client.in_process(node.hub), tmp_path)
        await s.deploy("worker", None, scale_max=2)
        fan = calls(*[("start_agent", {"agent": "worker", "input": f"n{i}"}) for i in range(20)])
        await s.deploy(
            "lead", [fan, finish("20 done")], delegates=[{"name": "worker"}], scale_max=1
        )
        lead = await s.submit("lead")
        assert (await s.wait(lead, timeout_s=120)).state == "succeeded"
        children = [t for t in await s.tasks() if t.parent_task_id == lead]
        assert len(children) == 20 and all(c.state == "succeeded" for c in children)
    finally:
        await node.drain(5)
        await store.close()


async def test_detached_child_replies_once_into_the_callers_conversation(stack: Stack) -> None:
    await stack.deploy("worker", None)
    await stack.deploy(
        "lead",
        [call("start_agent", agent="worker", input="later", detach=True), finish("started")],
        delegates=[{"name": "worker"}],
    )
    lead = await stack.submit("lead")
    assert (await stack.wait(lead)).state == "succeeded"
    [child] = [t for t in await stack.tasks() if t.parent_task_id == lead]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:  # (the reply's own run plays the lead's script again; only the first reply matters)
        replies = [t for t in await stack.tasks() if t.idempotency_key == f"reply:{child.id}"]
        if replies and replies[0].state == "succeeded":
            break
        assert loop.time() < deadline
        await asyncio.sleep(0.05)
    [reply] = replies
    assert reply.source == "reply:worker" and reply.deployment == "lead"
    assert "You said: later" in reply.input
    convs = await stack.store.all(
        "SELECT DISTINCT conversation_id FROM runs WHERE task_id IN (?, ?)", (lead, reply.id)
    )
    assert len(convs) == 1  # the reply continued the caller's conversation


@pytest.mark.parametrize(
    ("limits", "expect"),
    [
        ({"maxFanOut": 1}, "limits.maxFanOut 1"),
        ({"maxTotalDelegations": 1}, "limits.maxTotalDelegations 1"),
        ({"maxDelegationDepth": 0}, "limits.maxDelegationDepth 0"),
    ],
)
async def test_each_delegation_limit_is_a_tool_error_the_model_reads(
    stack: Stack, limits: dict[str, Any], expect: str
) -> None:
    await stack.deploy("worker", None)
    await stack.deploy(
        "lead",
        [
            calls(
                ("start_agent", {"agent": "worker", "input": "a", "detach": True}),
                ("start_agent", {"agent": "worker", "input": "b", "detach": True}),
            ),
            finish("ok"),
        ],
        delegates=[{"name": "worker"}],
        limits=limits,
    )
    lead = await stack.submit("lead")
    assert (await stack.wait(lead)).state == "succeeded"
    errors = [m["content"] for m in await stack.tool_results(lead) if m["is_error"]]
    assert errors and expect in errors[-1] and errors[-1].startswith("start_agent refused:")


async def test_unknown_delegate_is_a_deploy_warning_and_a_clear_tool_error(stack: Stack) -> None:
    warnings = await stack.deploy(
        "lead",
        [call("call_agent", agent="ghost", input="x"), finish("ok")],
        delegates=[{"name": "ghost"}],
    )
    assert any("ghost" in w and "not deployed" in w for w in warnings)
    lead = await stack.submit("lead")
    assert (await stack.wait(lead)).state == "succeeded"
    [res] = [m for m in await stack.tool_results(lead) if m["name"] == "call_agent"]
    assert res["is_error"] and "default/ghost is not deployed" in res["content"]


async def test_query_and_signal_reach_descendants_only(stack: Stack) -> None:
    await stack.deploy("worker", [{"text": "working"}], scale_max=1)
    outsider = await stack.submit("worker", "not yours")
    await stack.wait(outsider)
    await stack.deploy(
        "lead",
        [
            call("start_agent", agent="worker", input="mine", detach=True),
            call("query_agent", task=outsider),
            call("signal_agent", task=outsider, message="hi"),
            finish("ok"),
        ],
        delegates=[{"name": "worker"}],
    )
    lead = await stack.submit("lead")
    assert (await stack.wait(lead)).state == "succeeded"
    res = await stack.tool_results(lead)
    q = next(m for m in res if m["name"] == "query_agent")
    s = next(m for m in res if m["name"] == "signal_agent")
    assert q["is_error"] and "not one you delegated" in q["content"]
    assert s["is_error"] and "not one you delegated" in s["content"]
    assert (
        await stack.store.scalar("SELECT COUNT(*) FROM run_inbox WHERE task_id = ?", (outsider,))
        == 0
    )


async def test_query_and_signal_a_child(stack: Stack) -> None:
    from agen.hub import queue as q

    await stack.deploy("worker", [{"text": "done"}])
    await stack.deploy("lead", [finish("ok")], delegates=[{"name": "worker"}])
    # A child of a running lead task, made through the Hub's own path (no model timing involved).
    lead = await stack.submit("lead", "hold", not_before_ms=None)
    await stack.wait(lead)
    from agen.hub.auth import LOCAL_NEST
    from agen.wire.delegation import (
        ChildTaskRef,
        SignalChildTaskRequest,
        SubmitChildTaskRequest,
    )

    nest = Client.in_process(stack.node.hub, LOCAL_NEST)
    await stack.store.write(
        lambda tx: tx.execute("UPDATE tasks SET state = 'running' WHERE id = ?", (lead,))
    )
    child = (
        await nest.call(
            r.SubmitChildTask,
            SubmitChildTaskRequest(
                parent_task_id=lead, deployment="worker", input="x", call_key="k1"
            ),
        )
    ).child
    again = (
        await nest.call(
            r.SubmitChildTask,
            SubmitChildTaskRequest(
                parent_task_id=lead, deployment="worker", input="x", call_key="k1"
            ),
        )
    ).child
    assert again.id == child.id  # the same call key: the same child
    await stack.wait(child.id)
    view = (await nest.call(r.QueryChildTask, ChildTaskRef(task_id=lead, target=child.id))).task
    assert view.state == "succeeded" and view.outcome and view.outcome["summary"] == "done"
    assert "now" not in view.for_model()  # the model sees what a run is doing only while one runs
    await nest.call(
        r.SignalChildTask, SignalChildTaskRequest(task_id=lead, target=child.id, message="hey")
    )
    rows = await stack.store.all(
        "SELECT kind, ref, payload FROM run_inbox WHERE task_id = ?", (child.id,)
    )
    assert [(x["kind"], x["ref"]) for x in rows] == [("signal", lead)]
    assert q  # the queue module is the path both went through


async def test_locks_are_granted_once_and_released(stack: Stack) -> None:
    await stack.deploy(
        "locker",
        [
            call("acquire_lock", name="repo"),
            call("acquire_lock", name="repo"),
            call("release_lock", name="repo"),
            finish("ok"),
        ],
    )
    t = await stack.submit("locker")
    assert (await stack.wait(t)).state == "succeeded"
    res = [m for m in await stack.tool_results(t) if m["name"] != "finish"]
    assert res[0]["content"].startswith("lock 'repo' acquired (fence ")
    assert not res[1]["is_error"]  # the holder asking again keeps it
    assert res[2]["content"] == "lock 'repo' released"
    assert await stack.store.scalar("SELECT COUNT(*) FROM locks") == 0


async def test_a_tree_budget_stops_the_tree_with_partial_reports(stack: Stack) -> None:
    """The root's overrides.budget is the tree's: the children are narrowed to their share of what
    is left when they are submitted, and every run of the tree ends with a report once it is spent. Costs come
    from the local OpenAI-compatible server, as a paid provider reports them."""
    from agen.testing.openai_server import OpenAIServer, Reply

    def progress(model: str, cost: float) -> Reply:
        call = {"name": "report_progress", "arguments": {"note": "working"}}
        return Reply(text="step", tool_calls=[call], cost=cost, for_model=model)

    async with OpenAIServer() as srv:
        srv.script(
            progress("lead", 0.3),  # checkpointed before the children start: $0.3 of $1 spent
            Reply(
                text=None,
                tool_calls=[
                    {"name": "start_agent", "arguments": {"agent": "worker", "input": f"part {i}"}}
                    for i in range(2)
                ],
                cost=0.0,
                for_model="lead",
            ),
            Reply(text="lead report: partial", for_model="lead"),
            *[progress("worker", 0.2) for _ in range(12)],
        )
        for name, delegates in (("worker", None), ("lead", [{"name": "worker"}])):
            await stack.deploy(name, [finish("unused")], delegates=delegates)
            harness = {"provider": "openai", "model": name, "baseUrl": srv.base_url}
            (stack.root / name / "x-agen/harness.json").write_text(json.dumps(harness))
            await stack.client.call(
                r.UpdateDeployment,
                CreateDeploymentRequest(files=files_b64(stack.root / name)),
            )
        lead = await stack.submit("lead", overrides={"budget": {"maxUsdPerRun": 1.0}})
        done = await stack.wait(lead)
        worker_calls = sum(1 for q in srv.requests if q.get("model") == "worker")
    children = [t for t in await stack.tasks() if t.parent_task_id == lead]
    assert len(children) == 2
    for child in children:
        assert child.state == "succeeded" and child.outcome is not None
        assert child.outcome["status"] == "partial", child.outcome
        assert child.outcome["reason"] in ("tree_budget", "max_usd")
        stored = await stack.store.scalar("SELECT overrides FROM tasks WHERE id = ?", (child.id,))
        assert '"maxUsdPerRun":0.35' in stored.replace(" ", "")  # their half of the $0.7 left
    assert any(c.outcome and c.outcome["reason"] == "tree_budget" for c in children)
    assert done.outcome is not None and done.outcome["status"] == "partial"
    assert done.outcome["reason"] == "tree_budget"
    # stopped early: 12 worker turns were scripted; the tree's $1 is spent after 4 of them ($0.3 +
    # 4 x $0.2), the other child may have one more in flight, then each makes its one report call
    assert worker_calls <= 7
    spent = await stack.store.scalar("SELECT SUM(cost_usd) FROM runs")
    assert 1.0 <= spent <= 1.0 + worker_calls * 0.2


def used(tokens: int, turn: dict[str, Any]) -> dict[str, Any]:
    """A scripted turn that reports ``tokens`` of usage."""
    return {**turn, "usage": {"inputTokens": tokens - 5, "outputTokens": 5}}


async def test_children_started_together_share_the_tree_budget_instead_of_each_taking_it(
    stack: Stack,
) -> None:
    """Four children started in one turn split what is left of the root's 660 tokens (a
    reservation each, settled when it ends), so the tree overruns its budget by at most each
    run's last call and its report, never by four times what was left."""
    work = used(40, call("report_progress", note="working"))
    await stack.deploy("worker", [work] * 30, scale_max=8)
    await stack.deploy(
        "lead",
        [
            used(30, call("report_progress", note="planning")),
            used(
                30,
                calls(
                    *[("start_agent", {"agent": "worker", "input": f"part {i}"}) for i in range(4)]
                ),
            ),
            used(30, finish("lead report")),
        ],
        delegates=[{"name": "worker"}],
    )
    lead = await stack.submit("lead", overrides={"budget": {"maxTokensPerRun": 660}})
    done = await stack.wait(lead)
    children = [t for t in await stack.tasks() if t.parent_task_id == lead]
    assert len(children) == 4
    reserved = []
    for child in children:
        assert child.state == "succeeded" and child.outcome is not None
        assert child.outcome["status"] == "partial", child.outcome
        raw = await stack.store.scalar("SELECT overrides FROM tasks WHERE id = ?", (child.id,))
        reserved.append(json.loads(raw)["budget"]["maxTokensPerRun"])
    assert reserved == [150] * 4  # 660 - the lead's 60 before they started, split four ways
    assert done.outcome is not None and done.outcome["reason"] == "tree_budget"
    spent = await stack.store.scalar("SELECT SUM(input_tokens + output_tokens) FROM runs")
    # each run may pass its share by its last call and then writes its report: 2 x 40 per child,
    # the lead's report 30 (before: every child got all 600, about 2,900 tokens in all)
    assert 660 <= spent <= 660 + 4 * 2 * 40 + 30, spent


async def test_call_agent_past_its_inline_wait_suspends_and_resumes_with_the_same_child(
    stack: Stack,
) -> None:
    await stack.deploy("helper", [finish("slow answer")])
    await stack.deploy(
        "boss",
        [call("call_agent", agent="helper", input="take your time"), finish("got it")],
        delegates=[{"name": "helper"}],
        limits={"inlineWait": "0s"},  # never wait in place: suspend at once
    )
    boss = await stack.submit("boss")
    assert (await stack.wait(boss)).state == "succeeded"
    [child] = [t for t in await stack.tasks() if t.deployment == "helper"]
    waits = await stack.store.all(
        "SELECT data FROM events WHERE task_id = ? AND type = 'task.waiting'", (boss,)
    )
    assert [json.loads(w["data"]) for w in waits] == [{"wait_for": f"child:{child.id}"}]
    results = [m for m in await stack.tool_results(boss) if m["name"] == "call_agent"]
    assert [(m["content"], m["is_error"]) for m in results] == [("slow answer", 0)]
    assert child.idempotency_key and child.idempotency_key.startswith("call:")


async def test_start_agent_sets_overrides_only_where_the_delegate_allows_them(
    stack: Stack,
) -> None:
    await stack.deploy("open", [finish("ok")])
    await stack.deploy("closed", [finish("ok")])
    narrow = {"tools": ["finish"], "budget": {"maxTurns": 3}}
    await stack.deploy(
        "lead",
        [
            calls(
                ("start_agent", {"agent": "open", "input": "a", "overrides": narrow}),
                ("start_agent", {"agent": "closed", "input": "b", "overrides": narrow}),
            ),
            finish("ok"),
        ],
        delegates=[{"name": "open", "overrides": True}, {"name": "closed"}],
    )
    lead = await stack.submit(
        "lead", overrides={"budget": {"maxTurns": 9}, "permissions": {"deny": ["x.*"]}}
    )
    assert (await stack.wait(lead)).state == "succeeded"
    errors = [m["content"] for m in await stack.tool_results(lead) if m["is_error"]]
    assert len(errors) == 1 and "does not accept overrides" in errors[0]
    [child] = [t for t in await stack.tasks() if t.deployment == "open"]
    stored = await stack.store.scalar("SELECT overrides FROM tasks WHERE id = ?", (child.id,))
    assert json.loads(stored) == {
        "tools": ["finish"],
        "permissions": {"deny": ["x.*"]},
        "budget": {"maxTurns": 3},
    }


async def test_the_coordinator_template_runs_offline_delegating_to_the_researcher(
    stack: Stack,
) -> None:
    from agen.bundle.templates import get_template

    for name in ("researcher", "coordinator"):
        await stack.client.call(
            r.CreateDeployment,
            CreateDeploymentRequest(files=files_b64(get_template(name).path)),
        )
    lead = await stack.submit("coordinator", "how do bees navigate?")
    done = await stack.wait(lead)
    assert done.state == "succeeded" and done.outcome is not None
    assert done.outcome["summary"].startswith("Both researchers reported")
    children = [t for t in await stack.tasks() if t.parent_task_id == lead]
    assert len(children) == 2 and {c.state for c in children} == {"succeeded"}


async def test_a_bundle_can_ask_before_it_delegates(stack: Stack) -> None:
    from agen.wire.approvals import DecideApprovalRequest, ListApprovalsRequest

    await stack.deploy("worker", None)  # echo
    warnings = await stack.deploy(
        "lead",
        [call("call_agent", agent="worker", input="a"), finish("asked first")],
        delegates=[{"name": "worker"}],
        permissions={"ask": ["call_agent"], "allow": ["start_agent"], "default": "deny"},
    )
    assert warnings == []  # a rule naming a delegation tool names a tool of this bundle
    lead = await stack.submit("lead")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while not (
        pending := (await stack.client.call(r.ListApprovals, ListApprovalsRequest())).approvals
    ):
        assert loop.time() < deadline, "call_agent never asked"
        await asyncio.sleep(0.05)
    [ask] = pending
    assert ask.tool == "call_agent" and ask.task_id == lead
    assert [t.deployment for t in await stack.tasks()] == ["lead"]  # nothing delegated yet
    await stack.client.call(r.DecideApproval, DecideApprovalRequest(id=ask.id, approve=True))
    assert (await stack.wait(lead)).state == "succeeded"
    [child] = [t for t in await stack.tasks() if t.deployment == "worker"]
    assert child.parent_task_id == lead and child.state == "succeeded"
