"""Event-log RPCs: ListEvents (after a cursor, filtered, with a long-poll wait) and the notification
targets the Hub POSTs a namespace's events to."""

from __future__ import annotations

import asyncio

from agen.domain import columns
from agen.hub.auth import Principal
from agen.hub.events import notify
from agen.hub.events.log import EventFilter, list_events, tail_start
from agen.hub.rpc._known import require_known_deployment
from agen.hub.service import Hub
from agen.store import Tx
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


_SELECT = f"SELECT {columns(notify.NotifyTargetRow)} FROM notify_targets"


def _target(row: notify.NotifyTargetRow) -> NotifyTarget:
    view = notify.target_view(row)
    return NotifyTarget.model_validate({k: view[k] for k in NotifyTarget.model_fields})


async def set_notify_target(
    hub: Hub, p: Principal, req: SetNotifyTargetRequest
) -> NotifyTargetResponse:
    p.require_namespace(req.namespace)

    def fn(tx: Tx) -> notify.NotifyTargetRow:
        return notify.set_target(
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

    return NotifyTargetResponse(target=_target(await hub.store.write(fn)))


async def list_notify_targets(
    hub: Hub, p: Principal, req: ListNotifyTargetsRequest
) -> ListNotifyTargetsResponse:
    p.require_namespace(req.namespace)
    rows = await hub.store.rows(
        notify.NotifyTargetRow, f"{_SELECT} WHERE namespace = ? ORDER BY name", (req.namespace,)
    )
    return ListNotifyTargetsResponse(targets=[_target(r) for r in rows])


async def delete_notify_target(hub: Hub, p: Principal, req: NotifyTargetRef) -> Ok:
    p.require_namespace(req.namespace)
    await hub.store.write(lambda tx: notify.delete_target(tx, req.namespace, req.name))
    return Ok(message=f"notification target {req.name} removed")
