"""Approvals: pending tool calls with redacted arguments, requester and age; approve or deny with a note.

The table shows a preview of the arguments; the detail pane below it and the approve/deny dialog show
them in full (wrapped and highlighted), so what is approved is what was read.
"""

from __future__ import annotations

import json
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from agen.api import registry as r
from agen.tui import fmt
from agen.tui.rows import Cells, KeyedRows
from agen.tui.screens.base import AgenScreen
from agen.tui.widgets.arguments import arguments_renderable
from agen.tui.widgets.note_dialog import DecisionDialog
from agen.tui.widgets.table import FastTable
from agen.wire.approvals import Approval, DecideApprovalRequest, ListApprovalsRequest


class ApprovalsScreen(AgenScreen):
    WATCHES = ("approval.", "task.", "run.finished")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "decide(True)", "Approve"),
        Binding("d", "decide(False)", "Deny"),
        Binding("R", "show('transcript')", "Transcript"),  # one footer entry with r
    ]

    def __init__(self) -> None:
        super().__init__()
        self.approvals: list[Approval] = []
        self.args_shown: dict[str, str] = {}
        self.detail_of: str | None = None
        """The approval whose arguments the detail pane shows."""

    def body(self) -> ComposeResult:
        yield Static(
            "Nothing waits for approval. Tool calls a bundle's permissions mark `ask` appear here.",
            id="approvals-empty",
            classes="empty",
        )
        yield FastTable(id="approvals", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="approval-detail", classes="detail"):
            yield Static("", id="approval-args")

    def on_mount(self) -> None:
        self.rows = KeyedRows(
            self.query_one("#approvals", FastTable),
            (
                "ID",
                "DEPLOYMENT",
                "TOOL",
                "ARGUMENTS (redacted)",
                ("REQUESTER", 110),  # narrower screens drop these first; the detail pane has it all
                ("TASK", 100),
                "AGE",
            ),
        )

    async def load(self) -> None:
        try:
            approvals = []
            for ns in await self.agen.namespaces():
                approvals.extend(
                    (
                        await self.client.call(
                            r.ListApprovals, ListApprovalsRequest(namespace=ns, limit=1000)
                        )
                    ).approvals
                )
        except Exception as e:
            self.failed(e, "loading approvals")
            return
        self.approvals = approvals
        self.rows.apply([(a.id, self._cells(a)) for a in approvals])
        self.args_shown = {a.id: self.args_shown[a.id] for a in approvals}
        self.query_one("#approvals-empty").display = not approvals
        self.rows.table.display = bool(approvals)
        self.query_one("#approval-detail").display = bool(approvals)
        self.show_detail(self.rows.cursor_key())

    def tick(self) -> None:
        self.rows.apply([(a.id, self._cells(a)) for a in self.approvals])

    def show_detail(self, approval_id: str | None) -> None:
        """The highlighted approval's arguments in full, in the pane under the table."""
        approval = next((a for a in self.approvals if a.id == approval_id), None)
        if approval is None or approval_id == self.detail_of:
            return
        self.detail_of = approval_id
        self.query_one("#approval-args", Static).update(
            arguments_renderable(approval.tool, approval.arguments)
        )

    @on(FastTable.RowHighlighted, "#approvals")
    def _highlighted(self, event: FastTable.RowHighlighted) -> None:
        self.show_detail(event.row_key.value)

    def _cells(self, a: Approval) -> Cells:
        args = self.args_shown.get(a.id)
        if args is None:  # arguments never change: dumped once per approval
            args = json.dumps(a.arguments, ensure_ascii=False, sort_keys=True)
            args = self.args_shown[a.id] = args[:60] + ("…" if len(args) > 60 else "")
        return (
            fmt.short_id(a.id),
            a.deployment if self.agen.namespace is not None else f"{a.namespace}/{a.deployment}",
            a.tool,
            args,
            a.requested_by or "-",
            fmt.short_id(a.task_id),
            fmt.age(a.created_ms),
        )

    def selected(self) -> Approval | None:
        table = self.query_one("#approvals", FastTable)
        if not self.approvals or not 0 <= table.cursor_row < len(self.approvals):
            self.notify("Nothing to decide: no approval is pending", severity="warning")
            return None
        return self.approvals[table.cursor_row]

    def action_decide(self, approve: bool) -> None:
        approval = self.selected()
        if approval is None:
            return

        def done(result: tuple[bool, str | None] | None) -> None:
            if result is not None:
                self.decide(approval.id, result[0], result[1])

        self.app.push_screen(
            DecisionDialog(
                f"{approval.tool} for {approval.deployment}",
                approve,
                details=arguments_renderable(approval.tool, approval.arguments),
            ),
            done,
        )

    @work(group="act")
    async def decide(self, approval_id: str, approve: bool, note: str | None) -> None:
        try:
            await self.client.call(
                r.DecideApproval, DecideApprovalRequest(id=approval_id, approve=approve, note=note)
            )
        except Exception as e:
            self.failed(e, f"deciding approval {approval_id}")
            return
        self.notify(f"approval {fmt.short_id(approval_id)} {'approved' if approve else 'denied'}")
        self.reload()
        self.agen.count_approvals()

    def action_transcript(self) -> None:
        approval = self.selected()
        if approval is not None:
            self.agen.open_for("transcript", approval.task_id or approval.run_id)
