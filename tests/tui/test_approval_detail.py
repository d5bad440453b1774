"""What is approved is what was read: the full arguments, wrapped, in the detail pane and the dialog."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from textual.widgets import Static

from agen.api import registry as r
from agen.tui.app import AgenApp
from agen.tui.screens.approvals import ApprovalsScreen
from agen.tui.widgets.arguments import arguments_renderable, shell_commands
from agen.tui.widgets.note_dialog import DecisionDialog
from agen.tui.widgets.table import FastTable
from agen.wire.approvals import ListApprovalsRequest
from tests.observe_helpers import embedded_hub
from tests.tui.helpers import until

LONG = "make release VERSION=1.2.3 && git push origin main --tags && rm -rf /srv/releases/previous-build"


def plain(renderable: object, width: int) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_every_argument_is_shown_whole_and_shell_commands_are_set_apart() -> None:
    args = {"command": LONG, "cwd": "/srv"}
    text = plain(arguments_renderable("workspace.run", args), 60)
    assert "…" not in text
    assert "rm -rf /srv/releases/previous-build" in text.replace("\n", "")  # wrapped, never cut
    assert "command (shell):" in text
    assert shell_commands(args) == [("command", LONG)]


async def test_the_detail_pane_and_the_confirm_dialog_show_the_whole_tool_call(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated(text=LONG)
        task = await e.submit("gated", "ship")
        assert (await e.wait(task.id)).pending_approvals
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("a")
            await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen), "approvals")
            table = app.screen.query_one(FastTable)
            await until(pilot, lambda: table.row_count == 1, "the pending approval")
            assert "rm -rf" not in str(table.get_row_at(0)[3])  # the table row is a preview
            pane = app.screen.query_one("#approval-args", Static)
            await until(pilot, lambda: "rm -rf" in plain(pane.content, 70), "the full arguments")
            assert "previous-build" in plain(pane.content, 70).replace("\n", "")
            await pilot.press("y")
            await until(pilot, lambda: isinstance(app.screen, DecisionDialog), "the dialog")
            shown = plain(app.screen.query_one("#decision-details", Static).content, 70)
            assert "t.echo" in shown and "previous-build" in shown.replace("\n", "")


async def test_a_fresh_dialog_starts_on_cancel_so_enter_never_approves_and_a_does(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated(text=LONG)
        task = await e.submit("gated", "ship")
        assert (await e.wait(task.id)).pending_approvals
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("a")
            await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen), "approvals")
            table = app.screen.query_one(FastTable)
            await until(pilot, lambda: table.row_count == 1, "the pending approval")
            await pilot.press("y")
            await until(pilot, lambda: isinstance(app.screen, DecisionDialog), "the dialog")
            assert app.focused is not None and app.focused.id == "cancel"
            await pilot.press("enter")  # the stray enter: cancels
            await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen), "the dialog gone")
            assert (await e.wait(task.id, seconds=0)).pending_approvals  # nothing was decided
            await pilot.press("y")
            await until(pilot, lambda: isinstance(app.screen, DecisionDialog), "the dialog")
            await pilot.press("tab", *"a fine call", "enter")  # typed a is text; enter: the button
            assert isinstance(app.screen, DecisionDialog)
            assert app.focused is not None and app.focused.id == "decide"
            assert (await e.wait(task.id, seconds=0)).pending_approvals
            await pilot.press("enter")  # enter on the Approve button, reached on purpose, approves
            done = await e.wait(task.id)
        assert done.state == "succeeded" and not done.pending_approvals
        [decided] = (await e.client.call(r.ListApprovals, ListApprovalsRequest(all=True))).approvals
        assert decided.state == "approved" and decided.note == "a fine call"


async def test_the_approve_key_works_wherever_focus_is_but_in_the_note(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy_gated()
        task = await e.submit("gated", "ship")
        assert (await e.wait(task.id)).pending_approvals
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("a")
            await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen), "approvals")
            table = app.screen.query_one(FastTable)
            await until(pilot, lambda: table.row_count == 1, "the pending approval")
            await pilot.press("y")
            await until(pilot, lambda: isinstance(app.screen, DecisionDialog), "the dialog")
            await pilot.press("d")  # the deny key does nothing in an approve dialog
            assert isinstance(app.screen, DecisionDialog)
            await pilot.press("escape", "d")
            await until(pilot, lambda: isinstance(app.screen, DecisionDialog), "the deny dialog")
            await pilot.press("a")  # nor the approve key in a deny dialog
            assert isinstance(app.screen, DecisionDialog) and not app.screen.approve
            await pilot.press("escape", "y")
            await until(pilot, lambda: isinstance(app.screen, DecisionDialog), "the dialog")
            assert (await e.wait(task.id, seconds=0)).pending_approvals
            await pilot.press("a")
            done = await e.wait(task.id)
        assert done.state == "succeeded"
