"""ResolveAgent (seed 000 §6): a deployment's A2A addresses (this process's Gateway, and those of the
Nests it is assigned to) and the facts its agent card shows."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from agen.bundle.loader import load_bundle_files
from agen.hub.definitions import get_definition_files
from agen.hub.rpc.deployments import find_deployment
from agen.wire.agents import AgentSkillInfo, ResolveAgentRequest, ResolveAgentResponse

if TYPE_CHECKING:
    from agen.hub.auth import Principal
    from agen.hub.service import Hub


class _Gateway(NamedTuple):
    gateway_url: str


async def resolve_agent(hub: Hub, p: Principal, req: ResolveAgentRequest) -> ResolveAgentResponse:
    row = await find_deployment(hub, p, req.namespace, req.deployment)
    bundle = load_bundle_files(await get_definition_files(hub.store, row.definition_id))
    ready = await hub.store.scalar(
        "SELECT COUNT(*) FROM instances WHERE deployment_id = ? AND state IN ('ready','busy')",
        (row.id,),
    )
    nests = await hub.store.rows(
        _Gateway,
        "SELECT DISTINCT n.gateway_url FROM assignments a JOIN nests n ON n.id = a.nest_id"
        " WHERE a.deployment_id = ? AND a.count > 0 AND n.state = 'active'"
        " AND n.gateway_url IS NOT NULL ORDER BY n.gateway_url",
        (row.id,),
    )
    gateways = [*hub.gateway_urls, *(n.gateway_url for n in nests)]
    urls = [
        f"{u.rstrip('/')}/a2a/{req.namespace}/{req.deployment}" for u in dict.fromkeys(gateways)
    ]
    token, expires = await _user_token(hub, p, f"{req.namespace}/{req.deployment}")
    return ResolveAgentResponse(
        namespace=req.namespace,
        deployment=req.deployment,
        name=bundle.agent.name or bundle.name,
        description=bundle.agent.description or bundle.plugin.description or "",
        version=bundle.digest,
        skills=[
            AgentSkillInfo(id=s.name, name=s.name, description=s.front_matter.description or "")
            for s in sorted(bundle.skills.values(), key=lambda s: s.name)
        ],
        urls=urls,
        paused=row.paused,
        pause_reason=row.pause_reason,
        ready=int(ready or 0),
        call_token=token,
        call_token_expires_ms=expires,
    )


async def _user_token(hub: Hub, p: Principal, callee: str) -> tuple[str | None, int | None]:
    """Seed 000 §10: Resolve hands an operator a call token (10 min) naming them as caller and this
    one deployment; a viewer (who may not call), a Nest or a call token itself gets none."""
    if p.kind not in ("api", "local") or p.on_behalf or not p.allows("operator"):
        return None, None
    from agen.hub.call_keys import USER_TOKEN_TTL_MS, signing_key, user_token

    now = hub.clock()
    key = await signing_key(hub.store, now)
    token = user_token(key, token_id=p.id, callee=callee, now_ms=now, trust=p.trust)
    return token, now + USER_TOKEN_TTL_MS
