"""Identity RPCs: create API tokens, say who the caller is, and the local shutdown door."""

from __future__ import annotations

from agen.api.models.common import Empty, Ok
from agen.api.models.tokens import (
    CreateTokenRequest,
    CreateTokenResponse,
    TokenInfo,
    WhoAmIResponse,
)
from agen.errors import DeniedError
from agen.hub.auth import Principal, insert_token
from agen.hub.service import Hub
from agen.store import Tx


async def create_token(hub: Hub, p: Principal, req: CreateTokenRequest) -> CreateTokenResponse:
    for ns in req.namespaces:
        p.require_namespace(ns)
    if p.namespaces and not req.namespaces:
        raise DeniedError("a token limited to namespaces can only create tokens limited to some of them; pass --namespace")

    def fn(tx: Tx) -> tuple[str, str, int]:
        token_id, secret = insert_token(
            tx, scopes=list(req.scopes), namespaces=req.namespaces, name=req.name, ttl_ms=req.ttl_ms, trust=req.trust
        )
        return token_id, secret, tx.now_ms

    token_id, secret, now = await hub.store.write(fn)
    info = TokenInfo(
        id=token_id, name=req.name, scopes=sorted(set(req.scopes)), namespaces=sorted(set(req.namespaces)),
        trust=req.trust, created_ms=now, expires_ms=now + req.ttl_ms if req.ttl_ms else None,
    )
    return CreateTokenResponse(token=secret, info=info)


async def who_am_i(hub: Hub, p: Principal, req: Empty) -> WhoAmIResponse:
    return WhoAmIResponse(
        info=TokenInfo(id=p.id, name=p.name, kind=p.kind, scopes=sorted(p.scopes), namespaces=sorted(p.namespaces),
                       trust=p.trust),
        local=p.kind == "local",
    )


async def shutdown(hub: Hub, p: Principal, req: Empty) -> Ok:
    """`agen down`: start the same drain SIGTERM starts."""
    hub.request_shutdown()
    return Ok(message="draining")
