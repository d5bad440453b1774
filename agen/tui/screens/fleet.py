"""Fleet: deployments with their activity word, instances, spend and throughput; scale, stop/start, run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label, Static

from agen.api import registry as r
from agen.errors import NotFoundError
from agen.render.observe import activity_text, waiting_text
from agen.tui import fmt
from agen.tui.rows import Cells, KeyedRows
from agen.tui.screens.base import FRESH_S, AgenScreen
from agen.tui.widgets.confirm_dialog import ConfirmDialog
from agen.tui.widgets.input_dialog import InputDialog
from agen.tui.widgets.table import FastTable
from agen.wire.deployments import (
    Deployment,
    GetDeploymentRequest,
    Instance,
    ListDeploymentsRequest,
    ListInstancesRequest,
    PauseDeploymentRequest,
    ScaleDeploymentRequest,
)
from agen.wire.observe import GetMetricsRequest
from agen.wire.tasks import SubmitTaskRequest

if TYPE_CHECKING:
    from agen.wire.signals import Event

PATCH_MAX = 20
"""Events naming more deployments than this make one full load instead of one fetch per deployment."""
SPARK_EVERY_S = 30.0

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
        self.instances: list[Instance] = []
        self.by_name: dict[str, Deployment] = {}
        self.throughput: dict[str, list[int]] = {}
        self.shown: dict[str, tuple[Deployment, list[int] | None, Cells]] = {}
        """Per deployment: what its row was made from (the deployment, its throughput line) and the cells."""
        self.throughput_at = 0.0
        self.dirty: set[str] = set()
        """Deployments named by events since the last load: the next load fetches just these."""
        self.full = True
        """The next load fetches the whole fleet (first load, an event without a deployment, a big burst)."""

    def body(self) -> ComposeResult:
        yield Static(EMPTY, id="fleet-empty", classes="empty")
        yield FastTable(id="deployments", cursor_type="row", zebra_stripes=True)
        yield Static("", id="deployment-detail", classes="detail")
        yield Label("Instances", classes="section")
        yield FastTable(id="instances", cursor_type="row")

    def on_mount(self) -> None:
        self.rows = KeyedRows(
            self.query_one("#deployments", FastTable),
            (
                "NAME",
                ("KIND", 110),  # narrower screens drop these first
                "ACTIVITY",
                "FAILED (1h)",
                "DESIRED/READY",
                "QUEUED/RUNNING",
                ("SPEND TODAY", 100),
                ("THROUGHPUT 1h", 120),
            ),
        )
        self.instance_rows = KeyedRows(
            self.query_one("#instances", FastTable),
            ("INSTANCE", ("NEST", 100), "DEPLOYMENT", "STATE", "IN FLIGHT", "AGE"),
        )
        self.query_one("#fleet-empty").display = False
        self.query_one("#deployment-detail").display = False

    def outdated(self) -> bool:
        if not self.agen.live or time.monotonic() - self.loaded_at > FRESH_S:
            self.full = True  # no event said what changed: look at everything
        return super().outdated()

    def missed(self, events: list[Event]) -> None:
        self._note(events)
        super().missed(events)

    def changed(self, events: list[Event]) -> None:
        self._note(events)
        self.start_load()

    def reload(self) -> None:
        self.full = True
        self.start_load()

    def _note(self, events: list[Event]) -> None:
        ns = self.agen.namespace
        names = {e.deployment for e in events if ns is None or e.namespace == ns}
        if ns is None or None in names or len(names | self.dirty) > PATCH_MAX:
            self.full = True
        self.dirty |= {n for n in names if n}

    async def load(self) -> None:
        full, dirty = self.full or not self.by_name, self.dirty
        self.full, self.dirty = False, set()
        try:
            if full:
                await self._load_all()
            elif dirty:
                await self._load_some(sorted(dirty))
        except Exception as e:
            self.failed(e, "loading the fleet")

    async def _load_all(self) -> None:
        calls: list[Awaitable[Any]] = [
            self.client.call(
                r.ListDeployments,
                ListDeploymentsRequest(
                    namespace=self.agen.namespace or "default",
                    all_namespaces=self.agen.namespace is None,
                ),
            ),
            self.client.call(r.ListInstances, ListInstancesRequest(namespace=self.agen.namespace)),
        ]
        spark = time.monotonic() - self.throughput_at > SPARK_EVERY_S
        if spark:  # runs per 5 minutes: a minute-old line looks the same
            calls.append(self.client.call(r.GetMetrics, GetMetricsRequest(throughput_only=True)))
        got = await asyncio.gather(*calls)
        if spark:
            self.throughput, self.throughput_at = got[2].throughput, time.monotonic()
        self._show(got[0].deployments, got[1].instances)

    async def _load_some(self, names: list[str]) -> None:
        async def one(name: str) -> Deployment | None:
            try:
                return (
                    await self.client.call(
                        r.GetDeployment,
                        GetDeploymentRequest(namespace=self.agen.namespace or "default", name=name),
                    )
                ).deployment
            except NotFoundError:
                return None

        fresh = dict(zip(names, await asyncio.gather(*(one(n) for n in names)), strict=True))
        inst = (
            await self.client.call(
                r.ListInstances, ListInstancesRequest(namespace=self.agen.namespace)
            )
        ).instances
        if any(n not in self.by_name for n, d in fresh.items() if d is not None):
            self.full = True  # a new deployment: its place in the list comes from a full load
            await self._load_all()
            return
        deps = [d2 for d in self.deployments if (d2 := fresh.get(d.name, d)) is not None]
        self._show(deps, inst)

    def _show(self, deps: list[Deployment], inst: list[Instance]) -> None:
        self.deployments, self.by_name = deps, {d.name: d for d in deps}
        self.rows.apply([(self._key(d), self._row(d)) for d in deps])
        if len(self.shown) > len(deps):
            keys = {self._key(d) for d in deps}
            self.shown = {key: row for key, row in self.shown.items() if key in keys}
        self.query_one("#fleet-empty").display = not deps
        self.rows.table.display = bool(deps)
        self.show_detail(self.rows.cursor_key())
        self.instances = inst
        self.tick()

    def tick(self) -> None:
        """The instances' ages move on (the deployments' rows show no time)."""
        self.instance_rows.apply([(i.id, instance_cells(i)) for i in self.instances])

    def _row(self, d: Deployment) -> Cells:
        """A deployment's cells, made again only when it or the throughput line changed (a partial load
        keeps the other deployments' objects, and a full load mostly brings equal ones)."""
        spark = self.throughput.get(d.name)
        key = self._key(d)
        shown = self.shown.get(key)
        if shown is not None and shown[1] is spark and (shown[0] is d or shown[0] == d):
            return shown[2]
        cells = self._cells(d)
        self.shown[key] = (d, spark, cells)
        return cells

    def _key(self, d: Deployment) -> str:
        """Row key: names are unique within a namespace (the all-namespaces view shows several)."""
        return d.name if self.agen.namespace is not None else f"{d.namespace}/{d.name}"

    def _cells(self, d: Deployment) -> Cells:
        limit = d.budget.get("max_usd_per_day") or d.budget.get("maxUsdPerDay")
        return (
            d.name if self.agen.namespace is not None else f"{d.namespace}/{d.name}",
            d.kind,
            activity_text(d.activity, d.stopped_reason or d.needs or waiting_text(d.waiting_on)),
            Text(str(d.failed_1h), style="bold red" if d.failed_1h else "dim"),
            f"{d.desired}/{d.ready}",
            f"{d.queued}/{d.running}" + (f" +{d.waiting} waiting" if d.waiting else ""),
            Text(
                fmt.spend_bar(d.spent_today_usd, float(limit) if limit else None),
                style="red" if limit and d.spent_today_usd >= float(limit) else "",
            ),
            fmt.sparkline(self.throughput.get(d.name, [0] * 12)),
        )

    def show_detail(self, key: str | None) -> None:
        """The highlighted deployment's failures, under the table: why it is failing (instances that
        cannot start) and the last hour's failed tasks with the last one's error."""
        pane = self.query_one("#deployment-detail", Static)
        dep = next((d for d in self.deployments if self._key(d) == key), None)
        pane.display = dep is not None
        if dep is None:
            return
        self.agen.deployment = dep.name  # Logs opens on it
        pane.update(deployment_detail(dep))

    @on(FastTable.RowHighlighted, "#deployments")
    def _highlighted(self, event: FastTable.RowHighlighted) -> None:
        self.show_detail(event.row_key.value)

    def selected(self) -> Deployment | None:
        table = self.query_one("#deployments", FastTable)
        if (
            not self.deployments
            or table.cursor_row < 0
            or table.cursor_row >= len(self.deployments)
        ):
            self.notify(
                "No deployment selected: deploy one with `agen deploy <dir>`", severity="warning"
            )
            return None
        return self.deployments[table.cursor_row]

    def action_scale(self) -> None:
        dep = self.selected()
        if dep is None:
            return

        def done(value: str | None) -> None:
            if value is not None:
                self.scale(dep, value)

        self.app.push_screen(
            InputDialog(
                f"Scale {dep.name} to how many instances? (max {dep.scale.max})",
                value=str(dep.desired),
                ok="Scale",
            ),
            done,
        )

    @work(group="act")
    async def scale(self, dep: Deployment, value: str) -> None:
        name = dep.name
        if not value.strip().isdigit():
            self.notify(f"{value!r} is not a whole number of instances", severity="error")
            return
        try:
            await self.client.call(
                r.ScaleDeployment,
                ScaleDeploymentRequest(namespace=dep.namespace, name=name, replicas=int(value)),
            )
        except Exception as e:
            self.failed(e, f"scaling {name}")
            return
        self.notify(f"{name} scaled to {value}")
        self.reload()

    def action_stop_start(self) -> None:
        """Starting is harmless; stopping asks first (its instances stop, its queue waits)."""
        dep = self.selected()
        if dep is None:
            return
        if dep.paused:
            self.stop_start(dep)
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.stop_start(dep)

        self.app.push_screen(
            ConfirmDialog(
                f"Stop {dep.name}?",
                "Its instances stop and its queued tasks wait until it is started again (x).",
                yes="Stop",
            ),
            done,
        )

    @work(group="act")
    async def stop_start(self, dep: Deployment) -> None:
        try:
            await self.client.call(
                r.PauseDeployment,
                PauseDeploymentRequest(
                    namespace=dep.namespace, name=dep.name, paused=not dep.paused
                ),
            )
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
                self.submit(dep, text)

        self.app.push_screen(
            InputDialog(f"Run a task on {dep.name}: its input", placeholder="what to do", ok="Run"),
            done,
        )

    @work(group="act")
    async def submit(self, dep: Deployment, text: str) -> None:
        name = dep.name
        try:
            task = (
                await self.client.call(
                    r.SubmitTask,
                    SubmitTaskRequest(namespace=dep.namespace, deployment=name, input=text),
                )
            ).task
        except Exception as e:
            self.failed(e, f"submitting to {name}")
            return
        self.agen.target = task.id
        self.notify(f"task {task.id} queued on {name}")

    @on(FastTable.RowSelected, "#deployments")
    def action_open_tasks(self) -> None:
        dep = self.selected()
        if dep is not None:
            self.agen.open_tasks(dep.name)


def instance_cells(i: Instance) -> Cells:
    return (
        fmt.short_id(i.id),
        i.nest or fmt.short_id(i.nest_id),
        i.deployment,
        i.state,
        str(i.in_flight),
        fmt.age(i.started_ms),
    )


def deployment_detail(d: Deployment) -> Text:
    """What the Fleet's detail pane says of a deployment: its activity in full and its failures."""
    label = activity_text(d.activity, d.stopped_reason or d.needs or waiting_text(d.waiting_on))
    text = Text.assemble((d.name, "bold"), " · ", label)
    if d.failing_reason:
        text.append("\ninstances cannot start: ", style="bold red")
        text.append(d.failing_reason)
    if d.failed_1h:
        text.append(f"\n{d.failed_1h} failed in the last hour", style="bold red")
        if d.last_failure:
            text.append(f"; the last, {fmt.age(d.last_failure_ms)} ago: ")
            text.append(d.last_failure)
    elif not d.failing_reason:
        text.append("\nno failed tasks in the last hour", style="dim")
    return text
