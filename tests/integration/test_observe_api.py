"""Read APIs over recorded runs: ListRuns, GetTranscript, GetTrace, QueryTask, GetActivity, GetMetrics."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agen.api import registry as r
from agen.hub.observe.activity import Activity, activity
from agen.wire.approvals import DecideApprovalRequest, ListApprovalsRequest
from agen.wire.deployments import ListDeploymentsRequest, PauseDeploymentRequest
from agen.wire.observe import (
    GetActivityRequest,
    GetMetricsRequest,
    GetTraceRequest,
    GetTranscriptRequest,
    ListRunsRequest,
    QueryTaskRequest,
)
from tests.observe_helpers import MULTI_TOOL_SCRIPT, embedded_hub


def test_activity_word_order_is_working_then_needs_then_stop_reasons_then_idle() -> None:
    assert activity(working=True, needs=True, paused=True) == Activity("working")
    needs = activity(working=False, needs=True, paused=True)
    assert needs == Activity("needs", needs="approval") and str(needs) == "needs approval"
    assert activity(working=False, needs=False, budget=True, paused=True) == Activity(
        "stopped", "paused"
    )
    assert activity(working=False, needs=False, provider=True, budget=True) == Activity(
        "stopped", "budget"
    )
    assert activity(working=False, needs=False) == Activity("idle")
    assert str(Activity("stopped", "unplaced")) == "stopped (unplaced)"


async def test_multi_tool_run_shows_in_runs_transcript_trace_query_and_metrics(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        task = await e.run("scribe", "summarise the input", labels={"team": "docs"})
        assert task.state == "succeeded"
        c = e.client

        runs = (await c.call(r.ListRuns, ListRunsRequest(labels={"team": "docs"}))).runs
        assert [run.task_id for run in runs] == [task.id]
        assert runs[0].activity == "idle" and runs[0].usage.cost_usd > 0
        assert (await c.call(r.ListRuns, ListRunsRequest(labels={"team": "other"}))).runs == []
        assert (await c.call(r.ListRuns, ListRunsRequest(status="failed"))).runs == []
        roots = (await c.call(r.ListRuns, ListRunsRequest(roots=True))).runs
        assert roots[0].tree_runs == 1 and roots[0].tree_usage == roots[0].usage

        tr = await c.call(r.GetTranscript, GetTranscriptRequest(id=task.id, system=True))
        roles = [m.role for m in tr.messages]
        assert roles[0] == "user" and roles.count("tool") == 3 and roles[-1] == "assistant"
        calls = [call.name for m in tr.messages for call in m.tool_calls]
        assert calls == ["report_progress", "save_artifact", "report_progress"]
        assert tr.messages[1].usage and tr.messages[1].model == "fake"
        assert tr.system and "You answer briefly." in tr.system

        trace = await c.call(r.GetTrace, GetTraceRequest(id=task.id))
        names = [s.name for s in trace.spans]
        assert (
            names.count("gen_ai.chat") == 3
            and names.count("agen.tool") == 3
            and "agen.run" in names
        )
        assert trace.errors == 0 and trace.usage.input_tokens == 540 and trace.ended_ms is not None
        assert (await c.call(r.GetTrace, GetTraceRequest(id=trace.trace_id))).spans == trace.spans

        q = await c.call(r.QueryTask, QueryTaskRequest(id=task.id))
        assert (
            q.task.state == "succeeded" and q.run and q.run.id == trace.runs[0].id and q.now is None
        )
        # report_progress reaches the task: the latest value on it, the history in the event log
        assert (
            q.task.progress
            and q.task.progress["note"] == "saved findings"
            and q.task.progress["percent"] == 80
        )
        notes = [
            ev["data"]
            for ev in await e.node.store.all(
                "SELECT data FROM events WHERE type = 'task.progress' AND task_id = ?", (task.id,)
            )
        ]
        assert 1 <= len(notes) <= 2  # at most one event per task per 10-second bucket

        m = await c.call(r.GetMetrics, GetMetricsRequest())
        assert [(x.model, x.calls, x.failures) for x in m.models] == [("fake", 3, 0)]
        assert m.models[0].p50_ms is not None and m.models[0].usage.output_tokens == 80
        assert [(x.source, x.deployment, x.runs) for x in m.entries] == [("api", "scribe", 1)]
        assert sum(m.throughput["scribe"]) == 1


async def test_waiting_approval_reads_needs_everywhere_and_blocks_the_queue(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated()
        first = await e.submit("gated", "one")
        waiting = await e.wait(first.id)
        assert waiting.pending_approvals, waiting
        second = await e.submit("gated", "two")  # max 1 instance, 4 concurrency: may run too
        act = await e.client.call(r.GetActivity, GetActivityRequest())
        mine = [a for a in act.runs if a.task_id == first.id]
        assert mine and mine[0].doing == "approval" and mine[0].activity == "needs"
        assert "t.echo" in (mine[0].detail or "") or "t_echo" in (mine[0].detail or "")
        deps = (await e.client.call(r.ListDeployments, ListDeploymentsRequest())).deployments
        assert deps[0].pending_approvals >= 1
        q = await e.client.call(r.QueryTask, QueryTaskRequest(id=first.id))
        assert (
            q.now is not None
            and q.now.doing == "approval"
            and q.run
            and q.run.activity == "needs"
            and q.run.needs == "approval"
        )

        [approval] = [
            a
            for a in (await e.client.call(r.ListApprovals, ListApprovalsRequest())).approvals
            if a.task_id == first.id
        ]
        await e.client.call(r.DecideApproval, DecideApprovalRequest(id=approval.id, approve=True))
        assert (await e.wait(first.id)).state == "succeeded"
        for a in (await e.client.call(r.ListApprovals, ListApprovalsRequest())).approvals:
            await e.client.call(r.DecideApproval, DecideApprovalRequest(id=a.id, approve=True))
        assert (await e.wait(second.id)).state == "succeeded"


async def test_stopped_deployment_reads_stopped_paused(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("sleepy")
        await e.client.call(r.PauseDeployment, PauseDeploymentRequest(name="sleepy"))
        [dep] = (await e.client.call(r.ListDeployments, ListDeploymentsRequest())).deployments
        assert (dep.activity, dep.stopped_reason) == ("stopped", "paused")
        await e.client.call(r.PauseDeployment, PauseDeploymentRequest(name="sleepy", paused=False))
        await asyncio.sleep(0)
        [dep] = (await e.client.call(r.ListDeployments, ListDeploymentsRequest())).deployments
        assert dep.activity == "idle"
