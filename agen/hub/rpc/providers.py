"""Provider-hold RPCs: list the provider accounts the Hub holds after an account error, resume one."""

from __future__ import annotations

from agen.hub.auth import Principal
from agen.hub.queue import providers
from agen.hub.service import Hub
from agen.wire.signals import (
    ListProviderHoldsRequest,
    ListProviderHoldsResponse,
    ProviderHold,
    ResumeProviderRequest,
    ResumeProviderResponse,
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
