"""SVG snapshots of every screen at 160x45 and 80x24 (pytest-textual-snapshot's SVG extension and store).

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
from textual.widgets import Input, Static, Tree

from agen.render import observe as render_observe
from agen.store import Tx
from agen.tui import fmt
from agen.tui.app import AgenApp
from agen.tui.screens import runs as runs_screen
from agen.tui.screens import trace as trace_screen
from agen.tui.screens import triggers as triggers_screen
from agen.tui.screens.fleet import FleetScreen
from agen.tui.widgets.confirm_dialog import ConfirmDialog
from agen.tui.widgets.help_dialog import HelpDialog
from agen.tui.widgets.note_dialog import DecisionDialog
from agen.tui.widgets.table import FastTable
from agen.wire.observe import GetTraceResponse
from tests.observe_helpers import MULTI_TOOL_SCRIPT, Embedded, embedded_hub
from tests.tui.helpers import until

SIZE = (120, 40)
"""The size the behaviour tests drive at; snapshots are taken at both SIZES."""
SIZES = {"160x45": (160, 45), "80x24": (80, 24)}


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
    monkeypatch.setattr(runs_screen, "run_duration", lambda run: "1.2s" if run.finished_ms else "…")
    monkeypatch.setattr(
        triggers_screen, "next_fire", lambda due: "in 1m (09:00Z)" if due else "on call"
    )


@pytest.fixture(params=list(SIZES.values()), ids=list(SIZES))
def size(request: pytest.FixtureRequest) -> tuple[int, int]:
    return tuple(request.param)


@pytest.fixture
def svg(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(SVGImageExtension)


def still(app: AgenApp) -> None:
    for inp in app.screen.query(Input):
        inp.cursor_blink = False


async def shot(
    e: Embedded,
    keys: str,
    ready: object,
    size: tuple[int, int],
    *,
    filter_text: str | None = None,
    then: str = "",
    then_ready: object = None,
) -> str:
    """The screen reached by ``keys`` once ``ready``; ``then`` presses more keys (a dialog) after."""
    app = AgenApp(e.client, hub_label="test", watch=False)
    async with app.run_test(size=size) as pilot:
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
        for key in then:
            await pilot.press(key)
        if then_ready is not None:
            assert callable(then_ready)
            await until(pilot, lambda: bool(then_ready(app)), "what the keys opened")
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


async def test_fleet_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        await e.run("hello", "one")
        await settled_fleet(e)

        def ready(app: AgenApp) -> bool:
            screen = app.screen
            assert isinstance(screen, FleetScreen)
            return (
                len(screen.rows) == 1
                and str(next(iter(screen.rows.rows.values()))[4])
                == "1/1"  # every cell, shown or not
                and app.screen.query_one("#instances", FastTable).row_count == 1
            )

        assert await shot(e, "", ready, size) == svg


async def test_empty_fleet_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        assert (
            await shot(e, "", lambda app: app.screen.query_one("#fleet-empty").display, size) == svg
        )


async def test_tasks_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        await e.run("scribe", "summarise")
        ready = lambda app: "outcome" in str(app.screen.query_one("#task-detail").render())  # noqa: E731
        assert await shot(e, "t", ready, size) == svg


async def test_approvals_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated()
        task = await e.submit("gated", "ship")
        assert (await e.wait(task.id)).pending_approvals
        ready = lambda app: app.screen.query_one("#approvals", FastTable).row_count == 1  # noqa: E731
        assert await shot(e, "a", ready, size) == svg


async def test_transcript_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        await e.run("scribe", "summarise")
        ready = lambda app: len(app.screen.query_one(Tree).root.children) == 4  # noqa: E731
        assert await shot(e, "r", ready, size) == svg


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


async def test_trace_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        await e.run("scribe", "summarise")
        await pin_span_times(e)
        assert (
            await shot(e, "w", lambda app: getattr(app.screen, "trace", None) is not None, size)
            == svg
        )


async def test_events_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        ready = lambda app: app.screen.query_one("#events", FastTable).row_count > 0  # noqa: E731
        assert await shot(e, "e", ready, size, filter_text="deployment.") == svg


async def test_logs_snapshot(tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        from textual.widgets import RichLog

        ready = lambda app: bool(app.screen.query_one(RichLog).lines)  # noqa: E731
        assert await shot(e, "l", ready, size, filter_text="hello created") == svg


async def test_approve_dialog_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated(text="make release && git push --tags && rm -rf build/previous")
        task = await e.submit("gated", "ship")
        assert (await e.wait(task.id)).pending_approvals
        ready = lambda app: app.screen.query_one("#approvals", FastTable).row_count == 1  # noqa: E731
        dialog = lambda app: isinstance(app.screen, DecisionDialog)  # noqa: E731
        assert await shot(e, "a", ready, size, then="y", then_ready=dialog) == svg


LONG_CALL = (
    " && ".join(
        f"curl -fsSL https://releases.example.com/step-{i}.tar.gz | tar -xz -C /srv/app"
        for i in range(12)
    )
    + " && rm -rf /srv/app/previous && systemctl restart app"
)
"""A call longer than an 80x24 dialog: its end (the rm -rf) is reached by scrolling, and a marker says so."""


async def test_long_call_dialog_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated(text=LONG_CALL)
        task = await e.submit("gated", "ship")
        assert (await e.wait(task.id)).pending_approvals
        ready = lambda app: app.screen.query_one("#approvals", FastTable).row_count == 1  # noqa: E731

        def dialog(app: AgenApp) -> bool:
            if not isinstance(app.screen, DecisionDialog):
                return False
            long = app.screen.query_one("#decision-long").display
            return bool(long) == (size == SIZES["80x24"])  # the whole call fits at 160x45

        assert await shot(e, "a", ready, size, then="y", then_ready=dialog) == svg


async def test_help_snapshot(tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]) -> None:
    async with embedded_hub(tmp_path) as e:
        ready = lambda app: app.screen.query_one("#fleet-empty").display  # noqa: E731
        opened = lambda app: isinstance(app.screen, HelpDialog)  # noqa: E731
        assert await shot(e, "", ready, size, then="?", then_ready=opened) == svg


async def test_runs_snapshot(tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        await e.run("scribe", "summarise")
        ready = lambda app: app.screen.query_one("#runs", FastTable).row_count == 1  # noqa: E731
        assert await shot(e, "h", ready, size) == svg


async def test_triggers_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        triggers = [
            {"name": "hourly", "type": "cron", "schedule": "@hourly", "input": "tick"},
            {"name": "hook", "type": "webhook"},
        ]
        await e.deploy("sched", config={"kind": "pool", "triggers": triggers})
        ready = lambda app: app.screen.query_one("#triggers", FastTable).row_count == 2  # noqa: E731
        assert await shot(e, "g", ready, size) == svg


async def test_stop_confirm_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        await settled_fleet(e)
        ready = lambda app: app.screen.query_one("#deployments", FastTable).row_count == 1  # noqa: E731
        asked = lambda app: isinstance(app.screen, ConfirmDialog)  # noqa: E731
        assert await shot(e, "", ready, size, then="x", then_ready=asked) == svg


async def test_failures_fleet_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deployment whose every task fails shows how many failed and why (its row first, so the detail
    pane shows it); one waiting for an approval says what it needs."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    async with embedded_hub(tmp_path) as e:
        await e.deploy_unreachable("broken")
        assert (await e.run("broken", "go")).state == "failed"
        await e.deploy_gated()
        task = await e.submit("gated", "ship")
        assert (await e.wait(task.id)).pending_approvals
        await settled_fleet(e)

        def ready(app: AgenApp) -> bool:
            screen = app.screen
            assert isinstance(screen, FleetScreen)
            by_name = {d.name: d for d in screen.deployments}
            return (
                set(by_name) == {"broken", "gated"}
                and by_name["broken"].failed_1h == 1
                and by_name["gated"].needs == "approval"
                and "127.0.0.1:9" in str(screen.query_one("#deployment-detail", Static).content)
                and app.screen.query_one("#instances", FastTable).row_count == 2
            )

        assert await shot(e, "", ready, size) == svg


async def test_failed_transcript_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transcript of a run that failed ends with why, as `agen transcript` does."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    async with embedded_hub(tmp_path) as e:
        await e.deploy_unreachable()
        assert (await e.run("unreachable", "go")).state == "failed"

        def ready(app: AgenApp) -> bool:
            head = str(app.screen.query_one("#transcript-head", Static).content)
            return "── run failed (no_answer)" in head and "127.0.0.1:9" in head

        assert await shot(e, "r", ready, size) == svg


async def test_live_approvals_snapshot(
    tmp_path: Path, svg: SnapshotAssertion, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second later, with no event, the ages read one second more; at 80x24 the header still says
    how many approvals wait (the Hub's address is shortened first). The clock is the pinned age text,
    moved by the test."""
    shown = {"age": "17s"}
    monkeypatch.setattr(fmt, "age", lambda ms: shown["age"] if ms else "-")
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated()
        task = await e.submit("gated", "ship")
        assert (await e.wait(task.id)).pending_approvals
        app = AgenApp(e.client, hub_label="http://127.0.0.1:7070", watch=False)
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the first screen")
            await until(pilot, lambda: "approvals pending: 1" in app.sub_title, "the count")
            await pilot.press("a")

            def table() -> FastTable:
                return app.screen.query_one("#approvals", FastTable)

            await until(pilot, lambda: table().row_count == 1, "the approval")
            await settle(pilot, app)
            age = len(table().columns) - 1
            assert str(table().get_row_at(0)[age]) == "17s"
            shown["age"] = "18s"  # a second passes; no event arrives
            await until(pilot, lambda: str(table().get_row_at(0)[age]) == "18s", "the tick")
            still(app)
            await pilot.pause()
            assert app.export_screenshot() == svg
