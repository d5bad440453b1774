"""Trigger RPCs: a deployment's triggers with their fired, missed, skipped and rejected events, and
webhook secrets (the webhook door itself is agen.hub.triggers.webhook)."""

from __future__ import annotations

from typing import NamedTuple

from agen.domain import columns
from agen.hub.auth import Principal
from agen.hub.rpc.deployments import find_deployment
from agen.hub.service import Hub
from agen.hub.triggers.webhook import create_webhook_secret as _create_secret
from agen.wire.signals import (
    CreateWebhookSecretRequest,
    CreateWebhookSecretResponse,
    ListTriggerEventsRequest,
    ListTriggerEventsResponse,
    TriggerEvent,
    TriggerInfo,
)


class _Trigger(NamedTuple):
    name: str
    type: str
    active_since_ms: int
    next_due_ms: int | None
    last_due_ms: int | None


class _Event(NamedTuple):
    """A row of ``trigger_events``: the fields of a TriggerEvent."""

    id: str
    trigger_name: str
    status: str
    due_ms: int | None
    task_id: str | None
    reason: str | None
    created_ms: int
    calls: int  # trigger_events.count (a tuple has a count method)


async def list_trigger_events(
    hub: Hub, p: Principal, req: ListTriggerEventsRequest
) -> ListTriggerEventsResponse:
    dep = await find_deployment(hub, p, req.namespace, req.deployment)
    sql = (
        "SELECT id, trigger_name, status, due_ms, task_id, reason, created_ms, count AS calls"
        " FROM trigger_events WHERE deployment_id = ?"
    )
    params: list[object] = [dep.id]
    if req.trigger:
        sql += " AND trigger_name = ?"
        params.append(req.trigger)
    rows = await hub.store.rows(
        _Event, sql + f" ORDER BY created_ms DESC, id DESC LIMIT {req.limit}", params
    )
    trigs = await hub.store.rows(
        _Trigger,
        f"SELECT {columns(_Trigger)} FROM triggers WHERE deployment_id = ? ORDER BY name",
        (dep.id,),
    )
    return ListTriggerEventsResponse(
        triggers=[
            TriggerInfo(
                name=t.name,
                type=t.type,
                active_since_ms=t.active_since_ms,
                next_due_at=t.next_due_ms,
                last_due_at=t.last_due_ms,
            )
            for t in trigs
        ],
        events=[
            TriggerEvent(
                id=r.id,
                trigger_name=r.trigger_name,
                status=r.status,
                due_ms=r.due_ms,
                task_id=r.task_id,
                reason=r.reason,
                created_ms=r.created_ms,
                count=r.calls,
            )
            for r in rows
        ],
    )


async def create_webhook_secret(
    hub: Hub, p: Principal, req: CreateWebhookSecretRequest
) -> CreateWebhookSecretResponse:
    p.require_namespace(req.namespace)
    secret = await hub.store.write(
        lambda tx: _create_secret(tx, req.namespace, req.deployment, req.trigger)
    )
    return CreateWebhookSecretResponse(
        secret=secret, url_path=f"/hooks/{req.namespace}/{req.deployment}/{req.trigger}"
    )
