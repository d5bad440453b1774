"""Event-log RPCs: ListEvents (after a cursor, filtered, with a long-poll wait) and the notification
targets the Hub POSTs a namespace's events to."""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from agen.domain import columns
from agen.hub.auth import Principal
from agen.hub.observe import notify
from agen.hub.observe.events import EventFilter, list_events, tail_start
from agen.hub.rpc._known import require_known_deployment
from agen.hub.service import Hub
from agen.store import Tx, loads
from agen.wire.common import Ok
from agen.wire.signals import (
    ListEventsRequest,
    ListEventsResponse,
    ListNotifyTargetsRequest,
    ListNotifyTargetsResponse,
    NotifyTarget,
    NotifyTargetRef,
    NotifyTargetResponse,
    SetNotifyTargetRequest,
)


async def list_events_rpc(hub: Hub, p: Principal, req: ListEventsRequest) -> ListEventsResponse:
    if req.namespace:
        p.require_namespace(req.namespace)
    namespaces = [req.namespace] if req.namespace else sorted(p.namespaces)
    flt = EventFilter(
        types=tuple(req.types), labels=req.labels, deployment=req.deployment, severity=req.severity
    )
    await require_known_deployment(hub, namespaces, req.deployment, "events")
    after = req.after
    if req.last is not None and not after:
        after = await tail_start(hub.store, namespaces, req.last, flt)
    wait_s = 0.0 if hub.shutdown_requested.is_set() else req.wait_seconds
    search = asyncio.ensure_future(
        list_events(hub.store, namespaces, after=after, flt=flt, limit=req.limit, wait_s=wait_s)
    )
    if (
        wait_s > 0
    ):  # a Hub shutting down answers its long polls at once instead of holding up its exit
        stop = asyncio.ensure_future(hub.shutdown_requested.wait())
        await asyncio.wait({search, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if not search.done():
            search.cancel()
            return ListEventsResponse(events=[], cursor=after)
    page = await search
    return ListEventsResponse.model_validate({"events": page.events, "cursor": page.cursor})


class _Target(NamedTuple):
    """A row of ``notify_targets``: the fields of a NotifyTarget, its filters as JSON text."""

    name: str
    namespace: str
    url: str
    events: str  # JSON list
    deployment: str | None
    labels: str  # JSON object
    severity: str | None
    secret: str | None
    cursor_seq: int
    paused_until_ms: int | None
    last_error: str | None
    delivered: int
    dropped: int


_SELECT = f"SELECT {columns(_Target)} FROM notify_targets"


def _target(row: _Target) -> NotifyTarget:
    return NotifyTarget.model_validate(
        {**row._asdict(), "events": loads(row.events, []), "labels": loads(row.labels, {})}
    )


async def set_notify_target(
    hub: Hub, p: Principal, req: SetNotifyTargetRequest
) -> NotifyTargetResponse:
    p.require_namespace(req.namespace)

    def fn(tx: Tx) -> _Target:
        notify.set_target(
            tx,
            req.namespace,
            req.name,
            req.url,
            events=req.events,
            deployment=req.deployment,
            labels=req.labels,
            severity=req.severity,
            secret=req.secret,
        )
        row = tx.row(
            _Target, f"{_SELECT} WHERE namespace = ? AND name = ?", (req.namespace, req.name)
        )
        assert row is not None  # set in this transaction
        return row

    return NotifyTargetResponse(target=_target(await hub.store.write(fn)))


async def list_notify_targets(
    hub: Hub, p: Principal, req: ListNotifyTargetsRequest
) -> ListNotifyTargetsResponse:
    p.require_namespace(req.namespace)
    rows = await hub.store.rows(
        _Target, f"{_SELECT} WHERE namespace = ? ORDER BY name", (req.namespace,)
    )
    return ListNotifyTargetsResponse(targets=[_target(r) for r in rows])


async def delete_notify_target(hub: Hub, p: Principal, req: NotifyTargetRef) -> Ok:
    p.require_namespace(req.namespace)
    await hub.store.write(lambda tx: notify.delete_target(tx, req.namespace, req.name))
    return Ok(message=f"notification target {req.name} removed")
