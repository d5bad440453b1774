"""`agen tree`, `agen cancel --tree/--mode/--grace`, `agen pause/resume --tree` and `agen run
--delivery/--on-parent-end` against a real Hub over HTTP (no Nest: the tasks stay where the test puts them)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.hub import queue as q
from agen.hub.auth import LOCAL_ADMIN
from agen.hub.rpc.tasks import submit
from agen.hub.service import Hub
from agen.store import SQLiteStore, Store
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.integration.test_observe_cli import agen
from tests.observe_helpers import http_hub
from tests.unit.queue_helpers import add_run


async def _deploy(client: Client, root: Path, name: str) -> None:
    bundle = write_bundle(root / name, name, config={"kind": "pool", "scale": {"min": 0, "max": 1}})
    await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))


async def _task(hub: Hub, deployment: str, parent: str | None = None, **kw: Any) -> str:
    req = SubmitTaskRequest(deployment=deployment, input="work", **kw)
    return (await submit(hub, LOCAL_ADMIN, req, parent_task_id=parent)).task.id


async def _waiting_on_children(store: Store, task_id: str) -> None:
    """The coordinator's run started its children and suspended until they end."""
    dep = await store.scalar("SELECT deployment_id FROM tasks WHERE id = ?", (task_id,))
    [leased] = await store.write(
        lambda tx: q.lease_tasks(
            tx, deployment_id=str(dep), nest_id="n", instance_id="i", limit=1, lease_ms=60_000
        )
    )
    run_id = await store.write(lambda tx: add_run(tx, task_id, deployment="coordinator"))
    await store.write(
        lambda tx: tx.execute("UPDATE runs SET cost_usd = 0.0125 WHERE id = ?", (run_id,))
    )
    await store.write(lambda tx: q.suspend_task(tx, task_id, leased.lease_id, "children"))


@pytest.fixture
async def fleet(tmp_path: Path) -> Any:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    hub = Hub(store)
    client = Client.in_process(hub)
    e = SimpleNamespace(node=SimpleNamespace(hub=hub), client=client)
    try:
        async with http_hub(e) as (url, token):  # type: ignore[arg-type]
            await _deploy(client, tmp_path, "coordinator")
            await _deploy(client, tmp_path, "researcher")
            yield SimpleNamespace(hub=hub, store=store, url=url, token=token)
    finally:
        await store.close()


async def test_agen_tree_prints_the_tree_indented_with_wait_reason_and_cost(fleet: Any) -> None:
    root = await _task(fleet.hub, "coordinator")
    kids = [await _task(fleet.hub, "researcher", root) for _ in range(3)]
    leaf = await _task(fleet.hub, "researcher", kids[1])
    await _waiting_on_children(fleet.store, root)

    code, out, _ = await agen(fleet.url, fleet.token, "tree", leaf)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["TASK", "DEPLOYMENT", "STATE", "WAIT", "DURATION", "COST"]
    assert lines[1].startswith(root) and "coordinator" in lines[1]
    assert "waiting on 3 children" in lines[1] and "$0.0125" in lines[1]
    assert [ln.split()[0] for ln in lines[1:]] == [root, kids[0], kids[1], leaf, kids[2]]
    assert lines[2].startswith("  " + kids[0]) and lines[4].startswith("    " + leaf)

    code, out, _ = await agen(fleet.url, fleet.token, "tree", root, "--json")
    data = json.loads(out)
    assert code == 0 and data["root_task_id"] == root
    assert [n["task"]["id"] for n in data["tasks"]] == [root, *kids, leaf]
    assert data["tasks"][0]["unfinished_children"] == 3 and data["tasks"][0]["cost_usd"] == 0.0125


async def test_cancel_tree_and_pause_resume_tree_reach_every_task(fleet: Any) -> None:
    root = await _task(fleet.hub, "coordinator")
    kid = await _task(fleet.hub, "researcher", root)
    code, out, _ = await agen(fleet.url, fleet.token, "pause", kid, "--tree", "--reason", "look")
    assert code == 0 and "held" in out
    assert await fleet.store.scalar("SELECT COUNT(*) FROM tasks WHERE held = 1") == 2
    code, _, _ = await agen(fleet.url, fleet.token, "resume", root, "--tree")
    assert code == 0 and await fleet.store.scalar("SELECT COUNT(*) FROM tasks WHERE held = 1") == 0
    code, _, _ = await agen(
        fleet.url, fleet.token, "cancel", kid, "--tree", "--mode", "graceful", "--grace", "2s"
    )
    assert code == 0  # nothing was running: every task is stopped at once
    states = await fleet.store.all("SELECT DISTINCT state FROM tasks")
    assert [s["state"] for s in states] == ["cancelled"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cancel", "T", "--grace", "5s"], "--grace applies to --mode graceful only"),
        (["cancel", "T", "--mode", "gentle"], "--mode 'gentle'"),
        (["cancel", "T", "--mode", "graceful", "--grace", "10m"], "at most 5m"),
        (["run", "coordinator", "hi", "--delivery", "shout"], "--delivery"),
        (["run", "coordinator", "hi", "--on-parent-end", "orphan"], "--on-parent-end"),
    ],
)
async def test_bad_tree_and_delivery_flags_are_refused_with_the_flag_named(
    fleet: Any, args: list[str], message: str
) -> None:
    code, _, err = await agen(fleet.url, fleet.token, *args)
    assert code == 2 and message in err


async def test_agen_run_on_parent_end_and_delivery_reach_the_task(fleet: Any) -> None:
    code, out, _ = await agen(
        fleet.url,
        fleet.token,
        "run",
        "coordinator",
        "first",
        "--conversation",
        "c",
        "--on-parent-end",
        "abandon",
        "--no-wait",
    )
    assert code == 0
    first = out.strip()
    assert (
        await fleet.store.scalar("SELECT on_parent_end FROM tasks WHERE id = ?", (first,))
        == "abandon"
    )
    code, out, _ = await agen(
        fleet.url,
        fleet.token,
        "run",
        "coordinator",
        "and this",
        "--conversation",
        "c",
        "--delivery",
        "collect",
        "--no-wait",
    )
    assert code == 0 and out.strip() == first  # merged into the queued task
    assert (
        await fleet.store.scalar("SELECT input FROM tasks WHERE id = ?", (first,))
        == "first\n\nand this"
    )
