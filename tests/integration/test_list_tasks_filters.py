"""ListTasks filters in the Store, not on the page it returns: a label filter finds old tasks too."""

from __future__ import annotations

from pathlib import Path

from agen.api import registry as r
from agen.client import Client
from agen.hub.service import Hub
from agen.store import Store
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import ListTasksRequest, SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle


async def test_a_label_filter_finds_matching_tasks_behind_a_page_of_newer_ones(
    tmp_path: Path, store: Store
) -> None:
    client = Client.in_process(Hub(store))
    bundle = write_bundle(
        tmp_path / "b", "sorter", config={"kind": "pool", "scale": {"min": 0, "max": 1}}
    )
    await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))

    async def submit(text: str, **labels: str) -> str:
        resp = await client.call(
            r.SubmitTask, SubmitTaskRequest(deployment="sorter", input=text, labels=labels)
        )
        return resp.task.id

    docs_ops = await submit("old", team="docs", env="ops")
    docs = await submit("docs only", team="docs")
    for i in range(30):  # a page of newer tasks without the label
        await submit(f"noise {i}", team="infra")

    async def ids(**labels: str) -> list[str]:
        resp = await client.call(r.ListTasks, ListTasksRequest(labels=labels, limit=10))
        return [t.id for t in resp.tasks]

    assert await ids(team="docs") == [
        docs,
        docs_ops,
    ]  # newest first, found behind 30 newer tasks
    assert await ids(team="docs", env="ops") == [docs_ops]  # every label must match
    assert await ids(team="nobody") == []
    assert len(await ids()) == 10
