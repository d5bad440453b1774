"""Task trees in the TUI: the Tasks screen's tree panel (T: expand/collapse, "waiting on 3 children"),
the Trace screen's cross-agent task tree, the Fleet word of a deployment waiting on a delegate; with an
SVG snapshot of the Tasks screen showing a tree (ids, ages and durations pinned)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pytest_textual_snapshot import SVGImageExtension
from syrupy.assertion import SnapshotAssertion

from agen.api import registry as r
from agen.client import Client
from agen.hub import queue as q
from agen.hub.auth import LOCAL_ADMIN
from agen.hub.rpc.tasks import submit
from agen.hub.service import Hub
from agen.store import SQLiteStore
from agen.tui import fmt
from agen.tui.app import AgenApp
from agen.tui.screens.fleet import FleetScreen
from agen.tui.screens.tasks import TasksScreen
from agen.tui.screens.trace import TraceScreen
from agen.tui.widgets.table import FastTable
from agen.tui.widgets.task_tree import TaskTree
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.tui.helpers import cells, until
from tests.tui.test_snapshots import settle, still

SIZE = (120, 40)
NAMES: dict[str, str] = {}


@pytest.fixture(autouse=True)
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids are random and times move: show each task by its role in the tree, every age and duration fixed."""
    NAMES.clear()
    monkeypatch.setattr(fmt, "short_id", lambda value: NAMES.get(value or "", "ID"))
    monkeypatch.setattr(fmt, "age", lambda ms: "1m" if ms else "-")
    monkeypatch.setattr(fmt, "duration", lambda ms: "4.0s" if ms is not None else "…")


async def _task(hub: Hub, deployment: str, name: str, parent: str | None = None) -> str:
    req = SubmitTaskRequest(deployment=deployment, input=f"{name}'s work")
    task_id = (await submit(hub, LOCAL_ADMIN, req, parent_task_id=parent)).task.id
    NAMES[task_id] = name
    return task_id


@pytest.fixture
async def tree(tmp_path: Path) -> AsyncIterator[Any]:
    """A coordinator waiting on 3 researchers, one of which started a fetcher (no Nest: nothing moves)."""
    store = await SQLiteStore.open(tmp_path / "hub.db")
    hub = Hub(store)
    client = Client.in_process(hub)
    for name in ("coordinator", "researcher"):
        bundle = write_bundle(
            tmp_path / name, name, config={"kind": "pool", "scale": {"min": 0, "max": 1}}
        )
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
    root = await _task(hub, "coordinator", "root")
    kids = [await _task(hub, "researcher", f"kid{i}", root) for i in (1, 2, 3)]
    leaf = await _task(hub, "researcher", "fetch", kids[0])
    dep = await store.scalar("SELECT id FROM deployments WHERE name = 'coordinator'")
    [leased] = await store.write(
        lambda tx: q.lease_tasks(
            tx, deployment_id=str(dep), nest_id="n", instance_id="i", limit=1, lease_ms=60_000
        )
    )
    await store.write(lambda tx: q.suspend_task(tx, root, leased.lease_id, "children"))
    try:
        yield SimpleNamespace(client=client, root=root, kids=kids, leaf=leaf)
    finally:
        await store.close()


async def _tasks_with_tree(app: AgenApp, pilot: Any, t: Any) -> TaskTree:
    await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the first screen")
    await pilot.press("t")
    await until(pilot, lambda: isinstance(app.screen, TasksScreen), "the tasks screen")
    table = app.screen.query_one("#tasks", FastTable)
    await until(pilot, lambda: table.row_count == 5, "five tasks")
    table.move_cursor(row=cells(table, 0).index("root"))
    await pilot.press("T")
    box = app.screen.query_one("#task-tree", TaskTree)
    await until(pilot, lambda: box.shown is not None, "the task tree")
    return box


async def test_tasks_screen_shows_the_tree_with_the_wait_reason_and_collapses_children(
    tree: Any,
) -> None:
    app = AgenApp(tree.client, hub_label="test", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        box = await _tasks_with_tree(app, pilot, tree)
        assert str(box.root.label) == "tree of root · 5 tasks"
        [root] = box.root.children
        assert "waiting on 3 children" in str(root.label)
        assert [str(c.label).split()[0] for c in root.children] == ["kid1", "kid2", "kid3"]
        kid1 = root.children[0]
        assert kid1.is_expanded and [str(c.label).split()[0] for c in kid1.children] == ["fetch"]
        box.focus()
        box.move_cursor(kid1)
        await pilot.press("space")
        await until(pilot, lambda: not kid1.is_expanded, "kid1 collapsed")
        await pilot.press("space")
        await until(pilot, lambda: kid1.is_expanded, "kid1 expanded again")
        assert app.target == tree.kids[0]  # R and W now open kid1's transcript and trace
        await pilot.press("T")
        await until(pilot, lambda: not box.display, "the tree hidden again")


async def test_trace_screen_shows_the_cross_agent_task_tree(tree: Any) -> None:
    app = AgenApp(tree.client, hub_label="test", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the first screen")
        app.target = tree.leaf
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, TraceScreen), "the trace screen")
        box = app.screen.query_one("#trace-tasks", TaskTree)
        await until(pilot, lambda: box.display and box.shown is not None, "the task tree")
        assert box.shown is not None and len(box.shown.tasks) == 5
        assert str(box.root.label) == "tree of root · 5 tasks"


async def test_fleet_says_a_deployment_is_working_through_a_delegate(tree: Any) -> None:
    app = AgenApp(tree.client, hub_label="test", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the first screen")
        table = app.screen.query_one("#deployments", FastTable)
        await until(pilot, lambda: table.row_count == 2, "two deployments")
        words = dict(zip(cells(table, 0), cells(table, 2), strict=True))
        assert words["coordinator"] == "working (waiting on a delegate)"
        assert "delegate" not in words["researcher"]  # its tasks wait for a Nest, not a delegate


async def test_tasks_tree_snapshot(tree: Any, snapshot: SnapshotAssertion) -> None:
    app = AgenApp(tree.client, hub_label="test", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await _tasks_with_tree(app, pilot, tree)
        await settle(pilot, app)
        still(app)
        await pilot.pause()
        assert app.export_screenshot() == snapshot.use_extension(SVGImageExtension)
