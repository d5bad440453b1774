"""Logs: one deployment's operational log, tailed live (GetLogs waits for new lines)."""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input

from agen.api import registry as r
from agen.errors import AgenError
from agen.tui.screens.base import AgenScreen
from agen.tui.widgets.filter_box import FilterBox
from agen.wire.deployments import GetLogsRequest, ListDeploymentsRequest

WAIT_S = 10.0


class LogsScreen(AgenScreen):
    AUTO_FOCUS = "#log"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_filter", "Deployment / filter")
    ]

    def body(self) -> ComposeResult:
        # imported when the screen is first shown: RichLog loads rich.pretty and attrs (~12 ms),
        # which the TUI's start (the fleet screen) does not need
        from textual.widgets import RichLog

        yield FilterBox(
            placeholder="deployment [text to match]   (enter applies)",
            id="log-filter",
            leave_to="#log",
        )
        yield RichLog(id="log", wrap=True, markup=False)

    typed = False
    """The box holds what the user entered, rather than the Fleet's selection: it stays."""

    def action_focus_filter(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _apply(self, event: Input.Submitted) -> None:
        self.typed = bool(event.value.strip())
        self.query_one("#log").focus()  # as on the other screens: enter applies and lets go
        self.reload()

    def on_screen_suspend(self) -> None:
        self.workers.cancel_group(self, "tail")

    def start_load(self) -> None:
        """The tail restarts on every show (it stops while hidden), on the deployment highlighted on the
        Fleet unless one was entered here."""
        box = self.query_one(FilterBox)
        picked = self.agen.deployment
        if not self.typed and picked and box.value.partition(" ")[0] != picked:
            box.set_applied(picked)
        self.tail(box.value)

    @work(exclusive=True, group="tail")
    async def tail(self, text: str) -> None:
        from textual.widgets import RichLog

        log = self.query_one(RichLog)
        log.clear()
        name, _, needle = text.strip().partition(" ")
        try:
            if not name:
                deps = (
                    await self.client.call(r.ListDeployments, ListDeploymentsRequest())
                ).deployments
                if not deps:
                    log.write("No deployments yet: `agen deploy bundles/hello` creates one.")
                    return
                name = deps[0].name
                self.query_one(FilterBox).set_applied(name)
            after = 0
            wait = 0.0
            while True:
                resp = await self.client.call(
                    r.GetLogs,
                    GetLogsRequest(name=name, after_seq=after, limit=500, wait_seconds=wait),
                )
                for line in resp.lines:
                    if needle and needle not in line.message:
                        continue
                    log.write(
                        f"{line.level:<5} {line.deployment} {line.instance_id or '-':>10.10} {line.message}"
                    )
                after, wait = resp.last_seq, WAIT_S
        except AgenError as e:
            self.failed(e, f"tailing the log of {name or 'a deployment'}")
