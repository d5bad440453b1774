"""Fleet: deployments with their activity word, instances, spend and throughput; scale, stop/start, run."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Label, Static

from agen.api import registry as r
from agen.api.models.deployments import (
    Deployment,
    ListDeploymentsRequest,
    ListInstancesRequest,
    PauseDeploymentRequest,
    ScaleDeploymentRequest,
)
from agen.api.models.observe import GetMetricsRequest
from agen.api.models.tasks import SubmitTaskRequest
from agen.cli.observe_render import activity_text
from agen.tui import fmt
from agen.tui.screens.base import AgenScreen
from agen.tui.widgets.input_dialog import InputDialog

EMPTY = "No deployments yet.\nDeploy one with `agen deploy bundles/hello` (or any bundle folder), then press f."


class FleetScreen(AgenScreen):
    WATCHES = ("deployment.", "task.", "run.", "approval.", "instance.", "nest.")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "scale", "Scale"),
        Binding("x", "stop_start", "Stop/Start"),
        Binding("n", "run_task", "Run task"),
        Binding("enter", "open_tasks", "Tasks", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.deployments: list[Deployment] = []

    def body(self) -> ComposeResult:
        yield Static(EMPTY, id="fleet-empty", classes="empty")
        yield DataTable(id="deployments", cursor_type="row", zebra_stripes=True)
        yield Label("Instances", classes="section")
        yield DataTable(id="instances", cursor_type="row")

    def on_mount(self) -> None:
        deps = self.query_one("#deployments", DataTable)
        deps.add_columns("NAME", "KIND", "ACTIVITY", "DESIRED/READY", "QUEUED/RUNNING", "SPEND TODAY", "THROUGHPUT 1h")
        self.query_one("#instances", DataTable).add_columns("INSTANCE", "NEST", "DEPLOYMENT", "STATE", "IN FLIGHT", "AGE")
        self.query_one("#fleet-empty").display = False

    def reload(self) -> None:
        self.load()

    @work(exclusive=True, group="load")
    async def load(self) -> None:
        try:
            await self._load()
        finally:
            self.loads += 1

    async def _load(self) -> None:
        try:
            deps = (await self.client.call(r.ListDeployments, ListDeploymentsRequest())).deployments
            inst = (await self.client.call(r.ListInstances, ListInstancesRequest(namespace="default"))).instances
            spark = (await self.client.call(r.GetMetrics, GetMetricsRequest(throughput_only=True))).throughput
        except Exception as e:
            self.failed(e, "loading the fleet")
            return
        self.deployments = deps
        table = self.query_one("#deployments", DataTable)
        keep = table.cursor_row
        table.clear()
        for d in deps:
            limit = d.budget.get("max_usd_per_day") or d.budget.get("maxUsdPerDay")
            table.add_row(
                d.name, d.kind, activity_text(d.activity, d.stopped_reason), f"{d.desired}/{d.ready}",
                f"{d.queued}/{d.running}" + (f" +{d.waiting} waiting" if d.waiting else ""),
                Text(fmt.spend_bar(d.spent_today_usd, float(limit) if limit else None),
                     style="red" if limit and d.spent_today_usd >= float(limit) else ""),
                fmt.sparkline(spark.get(d.name, [0] * 12)), key=d.name)
        if deps:
            table.move_cursor(row=min(keep, len(deps) - 1))
        self.query_one("#fleet-empty").display = not deps
        table.display = bool(deps)
        itable = self.query_one("#instances", DataTable)
        itable.clear()
        for i in inst:
            itable.add_row(fmt.short_id(i.id), i.nest or fmt.short_id(i.nest_id), i.deployment, i.state,
                           str(i.in_flight), fmt.age(i.started_ms))

    def selected(self) -> Deployment | None:
        table = self.query_one("#deployments", DataTable)
        if not self.deployments or table.cursor_row < 0 or table.cursor_row >= len(self.deployments):
            self.notify("No deployment selected: deploy one with `agen deploy <dir>`", severity="warning")
            return None
        return self.deployments[table.cursor_row]

    def action_scale(self) -> None:
        dep = self.selected()
        if dep is None:
            return

        def done(value: str | None) -> None:
            if value is not None:
                self.scale(dep.name, value)

        self.app.push_screen(InputDialog(f"Scale {dep.name} to how many instances? (max {dep.scale.max})",
                                         value=str(dep.desired), ok="Scale"), done)

    @work(group="act")
    async def scale(self, name: str, value: str) -> None:
        if not value.strip().isdigit():
            self.notify(f"{value!r} is not a whole number of instances", severity="error")
            return
        try:
            await self.client.call(r.ScaleDeployment, ScaleDeploymentRequest(name=name, replicas=int(value)))
        except Exception as e:
            self.failed(e, f"scaling {name}")
            return
        self.notify(f"{name} scaled to {value}")
        self.reload()

    @work(group="act")
    async def action_stop_start(self) -> None:
        dep = self.selected()
        if dep is None:
            return
        try:
            await self.client.call(r.PauseDeployment, PauseDeploymentRequest(name=dep.name, paused=not dep.paused))
        except Exception as e:
            self.failed(e, f"stopping/starting {dep.name}")
            return
        self.notify(f"{dep.name} {'started' if dep.paused else 'stopped'}")
        self.reload()

    def action_run_task(self) -> None:
        dep = self.selected()
        if dep is None:
            return

        def done(text: str | None) -> None:
            if text:
                self.submit(dep.name, text)

        self.app.push_screen(InputDialog(f"Run a task on {dep.name}: its input", placeholder="what to do",
                                         ok="Run"), done)

    @work(group="act")
    async def submit(self, name: str, text: str) -> None:
        try:
            task = (await self.client.call(r.SubmitTask, SubmitTaskRequest(deployment=name, input=text))).task
        except Exception as e:
            self.failed(e, f"submitting to {name}")
            return
        self.agen.target = task.id
        self.notify(f"task {task.id} queued on {name}")

    @on(DataTable.RowSelected, "#deployments")
    def action_open_tasks(self) -> None:
        dep = self.selected()
        if dep is not None:
            self.agen.open_tasks(dep.name)
