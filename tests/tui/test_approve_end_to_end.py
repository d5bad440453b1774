"""Approving from the TUI lets a waiting run continue; an unreachable Hub says how to start one."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from agen.api import registry as r
from agen.client import Client
from agen.tui.app import AgenApp
from agen.tui.screens.approvals import ApprovalsScreen
from agen.tui.widgets.banner import ConnectionBanner
from agen.tui.widgets.note_dialog import DecisionDialog
from agen.tui.widgets.table import FastTable
from agen.wire.approvals import ListApprovalsRequest
from tests.observe_helpers import embedded_hub
from tests.tui.helpers import until


async def test_approving_in_the_tui_lets_the_waiting_run_finish(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated()
        task = await e.submit("gated", "ship the release")
        assert (await e.wait(task.id)).pending_approvals
        app = AgenApp(e.client, hub_label="test")
        async with app.run_test(size=(120, 40)) as pilot:
            await until(
                pilot,
                lambda: "approvals pending: 1" in app.sub_title,
                "the pending count in the header",
            )
            await pilot.press("a")
            await until(
                pilot, lambda: isinstance(app.screen, ApprovalsScreen), "the approvals screen"
            )
            table = app.screen.query_one(FastTable)
            await until(pilot, lambda: table.row_count == 1, "the pending approval")
            assert "t.echo" in str(table.get_row_at(0)[2]) and "ship it" in str(
                table.get_row_at(0)[3]
            )
            await pilot.press("y")
            await until(
                pilot, lambda: isinstance(app.screen, DecisionDialog), "the decision dialog"
            )
            app.screen.query_one(Input).value = "looks right"
            await pilot.press("a")  # approving takes its key (Enter starts on Cancel)
            done = await e.wait(task.id)
            assert done.state == "succeeded", done
            await until(
                pilot, lambda: "approvals pending: 0" in app.sub_title, "the count back to 0"
            )
            await until(pilot, lambda: table.row_count == 0, "the approval gone from the list")
        [decided] = (await e.client.call(r.ListApprovals, ListApprovalsRequest(all=True))).approvals
        assert decided.state == "approved" and decided.note == "looks right"


async def test_unreachable_hub_shows_a_banner_that_says_how_to_start_one() -> None:
    app = AgenApp(Client.http("http://127.0.0.1:9", None))
    async with app.run_test(size=(120, 40)) as pilot:
        banner = app.screen.query_one(ConnectionBanner)
        await until(pilot, lambda: banner.lost is not None and bool(banner.display), "the banner")
        assert "agen up" in str(banner.render())
