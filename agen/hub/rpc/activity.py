"""GetActivity: every unfinished run with what it does now, the queues and the warnings, in the
namespaces the caller sees (agen.hub.observe.live reads them; the leader records the same warnings as
events)."""

from __future__ import annotations

from agen.hub.auth import Principal
from agen.hub.observe.live import collect
from agen.hub.service import Hub
from agen.wire.observe import GetActivityRequest, GetActivityResponse


async def get_activity(hub: Hub, p: Principal, req: GetActivityRequest) -> GetActivityResponse:
    if req.namespace:
        p.require_namespace(req.namespace)
    return await collect(
        hub, [req.namespace] if req.namespace else sorted(p.namespaces), req.deployment
    )
