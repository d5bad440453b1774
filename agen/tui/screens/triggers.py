"""Triggers: every deployment's cron and webhook triggers, when each fires next and how its last firing went."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from textual.app import ComposeResult
from textual.widgets import Static

from agen.api import registry as r
from agen.tui import fmt
from agen.tui.rows import Cells, KeyedRows
from agen.tui.screens.base import AgenScreen
from agen.tui.widgets.table import FastTable
from agen.wire.deployments import Deployment, ListDeploymentsRequest
from agen.wire.signals import (
    ListTriggerEventsRequest,
    ListTriggerEventsResponse,
    TriggerEvent,
)

EVENTS_PER_DEPLOYMENT = 50
"""Recent trigger events fetched per deployment: the newest one per trigger is its last result."""


class TriggersScreen(AgenScreen):
    AUTO_FOCUS = "#triggers"
    WATCHES = ("trigger.", "deployment.", "task.")

    def body(self) -> ComposeResult:
        yield Static(
            "No triggers. A bundle's `triggers:` (cron or webhook) appear here once deployed.",
            id="triggers-empty",
            classes="empty",
        )
        yield FastTable(id="triggers", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.rows = KeyedRows(
            self.query_one("#triggers", FastTable),
            (
                "DEPLOYMENT",
                "TRIGGER",
                ("TYPE", 100),
                "NEXT FIRE",
                "LAST RESULT",
                ("TASK", 120),
            ),
        )
        self.query_one("#triggers-empty").display = False

    async def load(self) -> None:
        every = self.agen.namespace is None
        try:
            deps = (
                await self.client.call(
                    r.ListDeployments,
                    ListDeploymentsRequest(
                        namespace=self.agen.namespace or "default", all_namespaces=every
                    ),
                )
            ).deployments
            found = await asyncio.gather(*(self._triggers(d) for d in deps))
        except Exception as e:
            self.failed(e, "loading triggers")
            return
        rows: list[tuple[str, Cells]] = []
        for dep, resp in zip(deps, found, strict=True):
            last: dict[str, TriggerEvent] = {}
            for event in resp.events:  # newest first
                last.setdefault(event.trigger_name, event)
            name = f"{dep.namespace}/{dep.name}" if every else dep.name
            for t in resp.triggers:
                ev = last.get(t.name)
                rows.append(
                    (
                        f"{dep.namespace}/{dep.name}/{t.name}",
                        (
                            name,
                            t.name,
                            t.type,
                            next_fire(t.next_due_at),
                            last_result(ev),
                            fmt.short_id(ev.task_id) if ev and ev.task_id else "-",
                        ),
                    )
                )
        self.rows.apply(rows)
        self.query_one("#triggers-empty").display = not rows
        self.rows.table.display = bool(rows)

    async def _triggers(self, dep: Deployment) -> ListTriggerEventsResponse:
        return await self.client.call(
            r.ListTriggerEvents,
            ListTriggerEventsRequest(
                namespace=dep.namespace, deployment=dep.name, limit=EVENTS_PER_DEPLOYMENT
            ),
        )


def next_fire(due_ms: int | None) -> str:
    """``in 4m (09:30Z)``; a webhook (no schedule) shows ``on call``."""
    if due_ms is None:
        return "on call"
    return f"in {fmt.until(due_ms)} ({clock(due_ms)})"


def clock(ms: int) -> str:
    """The UTC time of day (date too when not today); snapshot tests pin it."""
    at = datetime.fromtimestamp(ms / 1000, tz=UTC)
    today = datetime.fromtimestamp(fmt.now_ms() / 1000, tz=UTC).date()
    return at.strftime("%H:%MZ" if at.date() == today else "%Y-%m-%d %H:%MZ")


def last_result(event: TriggerEvent | None) -> str:
    if event is None:
        return "never fired"
    text = f"{event.status} {fmt.age(event.created_ms)} ago"
    if event.count > 1:
        text += f" ×{event.count}"
    return text + (f": {event.reason}" if event.reason else "")
