"""RPC handlers for triggers, webhook secrets, provider holds, the event log, notification
targets and admission dry runs (the registry names them)."""

from __future__ import annotations

import asyncio

from agen.hub import admission, notify, providers
from agen.hub._known import require_known_deployment
from agen.hub.auth import Principal
from agen.hub.deployments import find_deployment
from agen.hub.events import EventFilter, list_events, tail_start
from agen.hub.service import Hub
from agen.hub.triggers.webhook import create_webhook_secret as _create_secret
from agen.store import Tx
from agen.wire.common import Ok
from agen.wire.signals import (
    CreateWebhookSecretRequest,
    CreateWebhookSecretResponse,
    DryRunTaskResponse,
    ListEventsRequest,
    ListEventsResponse,
    ListNotifyTargetsRequest,
    ListNotifyTargetsResponse,
    ListProviderHoldsRequest,
    ListProviderHoldsResponse,
    ListTriggerEventsRequest,
    ListTriggerEventsResponse,
    NotifyTarget,
    NotifyTargetRef,
    NotifyTargetResponse,
    ProviderHold,
    ResumeProviderRequest,
    ResumeProviderResponse,
    SetNotifyTargetRequest,
    TriggerEvent,
    TriggerInfo,
)
from agen.wire.tasks import SubmitTaskRequest


async def list_trigger_events(
    hub: Hub, p: Principal, req: ListTriggerEventsRequest
) -> ListTriggerEventsResponse:
    dep = await find_deployment(hub, p, req.namespace, req.deployment)
    sql = "SELECT * FROM trigger_events WHERE deployment_id = ?"
    params: list[object] = [dep["id"]]
    if req.trigger:
        sql += " AND trigger_name = ?"
        params.append(req.trigger)
    rows = await hub.store.all(
        sql + f" ORDER BY created_ms DESC, id DESC LIMIT {req.limit}", params
    )
    trigs = await hub.store.all(
        "SELECT * FROM triggers WHERE deployment_id = ? ORDER BY name", (dep["id"],)
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


def _hold(row: dict[str, object]) -> ProviderHold:
    return ProviderHold.model_validate({k: row[k] for k in ProviderHold.model_fields})


async def list_provider_holds(
    hub: Hub, p: Principal, req: ListProviderHoldsRequest
) -> ListProviderHoldsResponse:
    if req.namespace:
        p.require_namespace(req.namespace)
    namespaces = [req.namespace] if req.namespace else sorted(p.namespaces)
    rows = await hub.store.write(lambda tx: providers.list_holds(tx, namespaces))
    return ListProviderHoldsResponse(holds=[_hold(r) for r in rows])


async def resume_provider(
    hub: Hub, p: Principal, req: ResumeProviderRequest
) -> ResumeProviderResponse:
    p.require_namespace(req.account.partition("/")[0])
    row = await hub.store.write(lambda tx: providers.resume_provider(tx, req.account, by=p.subject))
    hub.work.notify()
    return ResumeProviderResponse(hold=_hold(row))


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


def _target(row: dict[str, object]) -> NotifyTarget:
    view = notify.target_view(row)
    return NotifyTarget.model_validate({k: view[k] for k in NotifyTarget.model_fields})


async def set_notify_target(
    hub: Hub, p: Principal, req: SetNotifyTargetRequest
) -> NotifyTargetResponse:
    p.require_namespace(req.namespace)
    row = await hub.store.write(
        lambda tx: notify.set_target(
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
    )
    return NotifyTargetResponse(target=_target(row))


async def list_notify_targets(
    hub: Hub, p: Principal, req: ListNotifyTargetsRequest
) -> ListNotifyTargetsResponse:
    p.require_namespace(req.namespace)
    rows = await hub.store.all(
        "SELECT * FROM notify_targets WHERE namespace = ? ORDER BY name", (req.namespace,)
    )
    return ListNotifyTargetsResponse(targets=[_target(r) for r in rows])


async def delete_notify_target(hub: Hub, p: Principal, req: NotifyTargetRef) -> Ok:
    p.require_namespace(req.namespace)
    await hub.store.write(lambda tx: notify.delete_target(tx, req.namespace, req.name))
    return Ok(message=f"notification target {req.name} removed")


async def dry_run_task(hub: Hub, p: Principal, req: SubmitTaskRequest) -> DryRunTaskResponse:
    """Every admission check for this task, without taking a rate token or queuing it."""
    dep = await find_deployment(hub, p, req.namespace, req.deployment)
    now = hub.clock()

    def fn(tx: Tx) -> admission.Verdict:
        return admission.dry_run(tx, dep, now)

    verdict = await hub.store.write(fn)
    return DryRunTaskResponse.model_validate(verdict.to_dict())
