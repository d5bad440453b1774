"""Identity RPCs: create API tokens, say who the caller is, rotate the call-token key, and the local
shutdown door.

A token never mints more than it holds: the new token's scopes, namespaces and trust are each
at most the caller's, so a limited admin cannot raise itself by creating a token.
"""

from __future__ import annotations

from agen.bundle.overrides import TRUST_RANK
from agen.errors import DeniedError
from agen.hub.auth import Principal, insert_token
from agen.hub.service import Hub
from agen.store import Tx
from agen.wire.common import Empty, Ok
from agen.wire.tokens import (
    CallTokenKey,
    CreateTokenRequest,
    CreateTokenResponse,
    RotateTokenKeyRequest,
    RotateTokenKeyResponse,
    TokenInfo,
    WhoAmIResponse,
)


async def create_token(hub: Hub, p: Principal, req: CreateTokenRequest) -> CreateTokenResponse:
    for scope in req.scopes:
        p.require(scope, f"creating a token with the {scope} scope")
    for ns in req.namespaces:
        p.require_namespace(ns)
    if p.namespaces and not req.namespaces:
        raise DeniedError(
            "a token limited to namespaces can only create tokens limited to some of them; pass --namespace"
        )
    if TRUST_RANK[req.trust] > TRUST_RANK.get(p.trust, 0):
        raise DeniedError(
            f"this token's trust is {p.trust}; it cannot create a token with trust {req.trust} "
            f"(pass --trust {p.trust} or lower)",
            field="trust",
            trust=req.trust,
        )

    def fn(tx: Tx) -> tuple[str, str, int]:
        token_id, secret = insert_token(
            tx,
            scopes=list(req.scopes),
            namespaces=req.namespaces,
            name=req.name,
            ttl_ms=req.ttl_ms,
            trust=req.trust,
            on_behalf=req.on_behalf,
        )
        return token_id, secret, tx.now_ms

    token_id, secret, now = await hub.store.write(fn)
    info = TokenInfo(
        id=token_id,
        name=req.name,
        scopes=sorted(set(req.scopes)),
        namespaces=sorted(set(req.namespaces)),
        trust=req.trust,
        created_ms=now,
        expires_ms=now + req.ttl_ms if req.ttl_ms is not None else None,
        on_behalf=req.on_behalf,
    )
    return CreateTokenResponse(token=secret, info=info)


async def who_am_i(hub: Hub, p: Principal, req: Empty) -> WhoAmIResponse:
    return WhoAmIResponse(
        info=TokenInfo(
            id=p.id,
            name=p.name,
            kind=p.kind,
            scopes=sorted(p.scopes),
            namespaces=sorted(p.namespaces),
            trust=p.trust,
        ),
        local=p.kind == "local",
    )


async def shutdown(hub: Hub, p: Principal, req: Empty) -> Ok:
    """`agen down`: start the same drain SIGTERM starts. Stopping the Hub stops every namespace,
    so an admin token limited to some of them is refused."""
    if p.namespaces:
        raise DeniedError(
            "stopping the Hub needs an admin token without a namespace limit; this one is limited to "
            f"{', '.join(sorted(p.namespaces))}",
            scope="admin",
        )
    hub.request_shutdown()
    return Ok(message="draining")


async def rotate_token_key(
    hub: Hub, p: Principal, req: RotateTokenKeyRequest
) -> RotateTokenKeyResponse:
    """`agen hub rotate-token-key` (seed 000 §10): the keys sign every namespace's tokens, so an
    admin token limited to some of them is refused."""
    from agen.hub.call_keys import GRACE_MS
    from agen.hub.call_keys import rotate_token_key as rotate

    if p.namespaces:
        raise DeniedError(
            "rotating the call-token key needs an admin token without a namespace limit; this one "
            f"is limited to {', '.join(sorted(p.namespaces))}",
            scope="admin",
        )
    now = hub.clock()
    done = await rotate(hub.store, now, force=req.force)
    retired = f"; key {done.retired.id} is retired" if done.retired else ""
    signs = "now" if done.signs_from_ms <= now else f"in {GRACE_MS // 60_000} minutes"
    return RotateTokenKeyResponse(
        added=done.added.id,
        retired=done.retired.id if done.retired else None,
        signs_from_ms=done.signs_from_ms,
        keys=[
            CallTokenKey(id=k.id, state=state, created_ms=k.created_ms)
            for k, state in done.keys.states(now)
        ],
        message=f"added call-token key {done.added.id}: published now, Hubs sign with it "
        f"{signs}{retired}",
    )
