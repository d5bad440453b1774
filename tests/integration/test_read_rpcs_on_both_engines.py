"""Every read the CLI, the TUI and the API make answers the same way on SQLite and on Postgres: no
SQLite-only SQL left in the Hub's read paths (labels filters, trace ordering, activity tails, metrics)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agen.api import registry as r
from agen.cli.tasks import wait_for_task
from agen.client import Client
from agen.node import LocalNode
from agen.store import Store
from agen.wire.deployments import (
    CreateDeploymentRequest,
    GetDeploymentRequest,
    GetLogsRequest,
    ListDeploymentsRequest,
    ListInstancesRequest,
)
from agen.wire.tasks import GetTaskRequest, ListTasksRequest, SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.integration.test_durable_approvals import gated_bundle


async def test_the_observe_reads_answer_on_both_engines(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agen.wire import feedback as fb
    from agen.wire import observe as ob

    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1)
    await node.start()
    try:
        client = Client.in_process(node.hub)
        bundle = write_bundle(tmp_path / "b", "echo")
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        ids = []
        for text, team in (("one", "docs"), ("two", "infra")):
            task = (
                await client.call(
                    r.SubmitTask,
                    SubmitTaskRequest(deployment="echo", input=text, labels={"team": team}),
                )
            ).task
            ids.append(task.id)
        for task_id in ids:
            assert (await wait_for_task(client, task_id, 60_000)).state == "succeeded"

        assert [
            d.name
            for d in (await client.call(r.ListDeployments, ListDeploymentsRequest())).deployments
        ] == ["echo"]
        got = (await client.call(r.GetDeployment, GetDeploymentRequest(name="echo"))).deployment
        assert got is not None and got.name == "echo"
        await client.call(r.ListInstances, ListInstancesRequest())
        await client.call(r.GetLogs, GetLogsRequest(name="echo"))
        assert (await client.call(r.GetTask, GetTaskRequest(id=ids[0]))).task.id == ids[0]
        docs = await client.call(r.ListTasks, ListTasksRequest(labels={"team": "docs"}))
        assert [t.id for t in docs.tasks] == [ids[0]]
        runs = await client.call(r.ListRuns, ob.ListRunsRequest(labels={"team": "infra"}))
        assert [run.task_id for run in runs.runs] == [ids[1]]
        transcript = await client.call(r.GetTranscript, ob.GetTranscriptRequest(id=ids[0]))
        assert "one" in transcript.model_dump_json()
        trace = await client.call(r.GetTrace, ob.GetTraceRequest(id=ids[0]))
        assert trace.model_dump_json().count(ids[0]) >= 1
        await client.call(r.QueryTask, ob.QueryTaskRequest(id=ids[1]))
        gated = gated_bundle(tmp_path / "gated", tmp_path / "effects.log")
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(gated)))
        waiting = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="gated", input="go"))
        ).task
        assert (await wait_for_task(client, waiting.id, 60_000)).pending_approvals
        activity = await client.call(r.GetActivity, ob.GetActivityRequest())
        assert waiting.id in activity.model_dump_json()  # the waiting run, with its message tail
        await client.call(r.GetMetrics, ob.GetMetricsRequest())
        await client.call(r.ListEvents, r.ListEvents.request(labels={"team": "docs"}))
        [pending] = (await client.call(r.ListApprovals, r.ListApprovals.request())).approvals
        one = await client.call(r.GetApproval, r.GetApproval.request(id=pending.id))
        assert one.approval == pending
        # a model nobody answers for: the task fails, and ps and the Fleet count it (FAILED (1h))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        unreachable = write_bundle(tmp_path / "u", "unreachable")
        harness = {"provider": "openai", "model": "m1", "baseUrl": "http://127.0.0.1:9/v1"}
        (unreachable / "x-agen" / "harness.json").write_text(
            json.dumps({**harness, "maxRetries": 0})
        )
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(unreachable)))
        bad = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="unreachable", input="x"))
        ).task
        assert (await wait_for_task(client, bad.id, 60_000)).state == "failed"
        deps = (await client.call(r.ListDeployments, ListDeploymentsRequest())).deployments
        failed = {d.name: (d.failed_1h, d.last_failure or "") for d in deps}
        assert failed["echo"] == (0, "") and failed["unreachable"][0] == 1
        assert "127.0.0.1:9" in failed["unreachable"][1]
        assert {d.name: d.needs for d in deps}["gated"] == "approval"
        await client.call(
            r.RecordFeedback,
            fb.RecordFeedbackRequest(id=ids[0], score=1.0, labels={"rater": "ann"}),
        )
        rated = await client.call(r.ListFeedback, fb.ListFeedbackRequest(labels={"rater": "ann"}))
        assert len(rated.feedback) == 1
        await client.call(r.ListMemory, r.ListMemory.request())
        await client.call(r.ListArtifacts, r.ListArtifacts.request())
        await client.call(r.ListTriggerEvents, r.ListTriggerEvents.request(deployment="echo"))
        await client.call(r.ListProviderHolds, r.ListProviderHolds.request())
    finally:
        await node.drain(5)
