"""SVG snapshots of every screen at 120x40 (pytest-textual-snapshot's SVG extension and store).

``snap_compare`` runs the app in its own event loop, but these screens read a real embedded
Hub living in the test's loop, so the tests drive ``run_test`` themselves and compare
``export_screenshot()`` with the same SVG snapshot extension. Volatile values (ids, ages) go
through agen.tui.fmt and are pinned here; span timings are fixed in the store the test reads
(``pin_span_times``); `pytest --snapshot-update` rewrites.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_textual_snapshot import SVGImageExtension
from syrupy.assertion import SnapshotAssertion
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Tree

from agen.render import observe as render_observe
from agen.store import Tx
from agen.tui import fmt
from agen.tui.app import AgenApp
from agen.tui.screens import trace as trace_screen
from agen.tui.screens.fleet import FleetScreen
from agen.wire.observe import GetTraceResponse
from tests.observe_helpers import MULTI_TOOL_SCRIPT, Embedded, embedded_hub
from tests.tui.helpers import until

SIZE = (120, 40)


@pytest.fixture(autouse=True)
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fmt, "short_id", lambda value: "ID" if value else "-")
    monkeypatch.setattr(fmt, "age", lambda ms: "1m" if ms else "-")
    real = render_observe.trace_tree

    def pinned_tree(resp: GetTraceResponse) -> object:
        """Ids are random: pin them. Timings are pinned in the data itself (``pin_span_times``)."""
        fixed = resp.model_copy(deep=True)
        fixed.trace_id = "TRACE"
        for s in fixed.spans:
            s.run_id = "RUN"
        return real(fixed)

    monkeypatch.setattr(trace_screen, "trace_tree", pinned_tree)


@pytest.fixture
def svg(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(SVGImageExtension)


def still(app: AgenApp) -> None:
    for inp in app.screen.query(Input):
        inp.cursor_blink = False


async def shot(e: Embedded, keys: str, ready: object, *, filter_text: str | None = None) -> str:
    app = AgenApp(e.client, hub_label="test", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the first screen")
        for key in keys:
            await pilot.press(key)
        assert callable(ready)
        await until(pilot, lambda: bool(ready(app)), "the screen's data")
        if filter_text is not None:
            box = app.screen.query_one(Input)
            box.value = filter_text
            await box.action_submit()
        await settle(pilot, app)
        still(app)
        await pilot.pause()
        return app.export_screenshot()


async def settled_fleet(e: Embedded) -> None:
    """Instances report on a heartbeat: wait until the fleet is steady before looking at it."""
    import asyncio

    from agen.api import registry as r
    from agen.wire.deployments import ListDeploymentsRequest

    for _ in range(200):
        deps = (await e.client.call(r.ListDeployments, ListDeploymentsRequest())).deployments
        if all(d.ready == d.desired and d.running == 0 for d in deps):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the fleet did not settle")


async def settle(pilot: Pilot[Any], app: AgenApp) -> None:
    await pilot.pause(0.3)
    await until(
        pilot,
        lambda: all(w.is_finished for w in app.workers if w.group not in ("tail", "watch")),
        "the screen's loads",
    )
    await pilot.pause()


async def test_fleet_snapshot(tmp_path: Path, svg: SnapshotAssertion) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        await e.run("hello", "one")
        await settled_fleet(e)

        def ready(app: AgenApp) -> bool:
            table = app.screen.query_one("#deployments", DataTable)
            return (
                table.row_count == 1
                and str(table.get_row_at(0)[3]) == "1/1"
                and app.screen.query_one("#instances", DataTable).row_count == 1
            )

        assert await shot(e, "", ready) == svg


async def test_empty_fleet_snapshot(tmp_path: Path, svg: SnapshotAssertion) -> None:
    async with embedded_hub(tmp_path) as e:
        assert await shot(e, "", lambda app: app.screen.query_one("#fleet-empty").display) == svg


async def test_tasks_snapshot(tmp_path: Path, svg: SnapshotAssertion) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        await e.run("scribe", "summarise")
        ready = lambda app: "outcome" in str(app.screen.query_one("#task-detail").render())  # noqa: E731
        assert await shot(e, "t", ready) == svg


async def test_approvals_snapshot(tmp_path: Path, svg: SnapshotAssertion) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated()
        task = await e.submit("gated", "ship")
        assert (await e.wait(task.id)).pending_approvals
        ready = lambda app: app.screen.query_one("#approvals", DataTable).row_count == 1  # noqa: E731
        assert await shot(e, "a", ready) == svg


async def test_transcript_snapshot(tmp_path: Path, svg: SnapshotAssertion) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        await e.run("scribe", "summarise")
        ready = lambda app: len(app.screen.query_one(Tree).root.children) == 4  # noqa: E731
        assert await shot(e, "r", ready) == svg


T0 = 1_700_000_000_000
"""The injected start of the trace: every span's times are set from it, so the waterfall is exact."""


async def pin_span_times(e: Embedded) -> None:
    """Give the recorded spans fixed times in the store: the run 0-70 ms, then each model call and tool
    call 8 ms long, 10 ms apart, in the run's logical order (turn, model call before its tools, call id)
    rather than the order real (and, under load, varying) durations gave them."""
    store = e.node.hub.store
    rows = await store.all("SELECT id, name, attrs FROM spans")

    def order(row: dict[str, object]) -> tuple[bool, int, bool, str]:
        attrs = json.loads(str(row["attrs"]))
        return (
            row["name"] != "agen.run",
            int(attrs.get("agen.turn", 0)),
            row["name"] != "gen_ai.chat",
            str(attrs.get("gen_ai.tool.call.id") or ""),
        )

    def write(tx: Tx) -> None:
        for i, row in enumerate(sorted(rows, key=order)):
            start, end = (T0, T0 + 70) if i == 0 else (T0 + 10 * i, T0 + 10 * i + 8)
            tx.execute(
                "UPDATE spans SET started_ms = ?, ended_ms = ? WHERE id = ?",
                (start, end, row["id"]),
            )

    await store.write(write)


async def test_trace_snapshot(tmp_path: Path, svg: SnapshotAssertion) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        await e.run("scribe", "summarise")
        await pin_span_times(e)
        assert await shot(e, "w", lambda app: getattr(app.screen, "trace", None) is not None) == svg


async def test_events_snapshot(tmp_path: Path, svg: SnapshotAssertion) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        ready = lambda app: app.screen.query_one("#events", DataTable).row_count > 0  # noqa: E731
        assert await shot(e, "e", ready, filter_text="deployment.") == svg


async def test_logs_snapshot(tmp_path: Path, svg: SnapshotAssertion) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        from textual.widgets import RichLog

        ready = lambda app: bool(app.screen.query_one(RichLog).lines)  # noqa: E731
        assert await shot(e, "l", ready, filter_text="hello created") == svg
