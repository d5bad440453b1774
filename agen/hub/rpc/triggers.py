"""Trigger RPCs: a deployment's triggers with their fired, missed, skipped and rejected events, and
webhook secrets (the webhook door itself is agen.hub.triggers.webhook)."""

from __future__ import annotations

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


async def list_trigger_events(
    hub: Hub, p: Principal, req: ListTriggerEventsRequest
) -> ListTriggerEventsResponse:
    dep = await find_deployment(hub, p, req.namespace, req.deployment)
    sql = "SELECT * FROM trigger_events WHERE deployment_id = ?"
    params: list[object] = [dep.id]
    if req.trigger:
        sql += " AND trigger_name = ?"
        params.append(req.trigger)
    rows = await hub.store.all(
        sql + f" ORDER BY created_ms DESC, id DESC LIMIT {req.limit}", params
    )
    trigs = await hub.store.all(
        "SELECT * FROM triggers WHERE deployment_id = ? ORDER BY name", (dep.id,)
    )
    return ListTriggerEventsResponse(
        triggers=[
            TriggerInfo(
                name=t["name"],
                type=t["type"],
                active_since_ms=t["active_since_ms"],
                next_due_at=t["next_due_ms"],
                last_due_at=t["last_due_ms"],
            )
            for t in trigs
        ],
        events=[
            TriggerEvent.model_validate({k: r[k] for k in TriggerEvent.model_fields}) for r in rows
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
