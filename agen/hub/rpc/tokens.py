"""Identity RPCs: create, list and revoke API tokens, say who the caller is, rotate the call-token key,
and the local shutdown door.

A token never mints more than it holds: the new token's scopes, namespaces and trust are each
at most the caller's, so a limited admin cannot raise itself by creating a token.
"""

from __future__ import annotations

from agen.bundle.overrides import TRUST_RANK
from agen.errors import ConflictError, DeniedError, InvalidError, NotFoundError
from agen.hub.auth import (
    LOCAL_ADMIN_SUBJECT,
    TOKEN_COLUMNS,
    Principal,
    TokenRow,
    insert_token,
)
from agen.hub.leadership import SYSTEM_NAMESPACE
from agen.hub.service import Hub
from agen.store import Tx, loads
from agen.wire.common import Empty, Ok
from agen.wire.tokens import (
    CallTokenKey,
    CreateTokenRequest,
    CreateTokenResponse,
    ListTokensRequest,
    ListTokensResponse,
    RevokeTokenRequest,
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
    acts_through = _acts_through(p, req)
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
            acts_through=acts_through,
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
        deployment=acts_through,
    )
    return CreateTokenResponse(token=secret, info=info)


def _acts_through(p: Principal, req: CreateTokenRequest) -> str | None:
    """An on-behalf token's deployment as ``<namespace>/<name>``: required with on_behalf (it is the
    only deployment whose running tasks the token may name), refused without it."""
    if not req.on_behalf:
        if req.deployment is not None:
            raise InvalidError(
                "deployment names an on-behalf token's agent; pass it with on_behalf "
                "(`agen token create --on-behalf --deployment NAME`)",
                field="deployment",
            )
        return None
    if req.deployment is None:
        raise InvalidError(
            "an on-behalf token acts only through the running tasks of its agent's deployment: name "
            "it (`agen token create --on-behalf --deployment [NAMESPACE/]NAME`)",
            field="deployment",
        )
    namespace, _, name = req.deployment.rpartition("/")
    namespace = namespace or "default"
    p.require_namespace(namespace)
    return f"{namespace}/{name}"


async def list_tokens(hub: Hub, p: Principal, req: ListTokensRequest) -> ListTokensResponse:
    """`agen token ls`: the API tokens this admin could have made (a namespace-limited admin sees
    those limited to some of its namespaces); secrets are never stored, so never shown."""
    revoked = "" if req.include_revoked else " AND revoked_ms IS NULL"
    rows = await hub.store.rows(
        TokenRow,
        f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE kind = 'api'{revoked} ORDER BY created_ms, id",
    )
    return ListTokensResponse(tokens=[_info(r) for r in rows if _manages(p, r)])


async def revoke_token(hub: Hub, p: Principal, req: RevokeTokenRequest) -> Ok:
    """`agen token revoke ID`: the token is refused from the next request on, by every Hub (they read
    the Store for every bearer token; nothing caches it)."""

    def fn(tx: Tx) -> str:
        row = tx.row(
            TokenRow, f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE id = ? AND kind = 'api'", (req.id,)
        )
        if row is None or not _manages(p, row):
            raise NotFoundError(
                f"no API token {req.id!r}; `agen token ls` lists them (Nest credentials end with "
                "`agen nests revoke`)",
                id=req.id,
            )
        if row.subject == LOCAL_ADMIN_SUBJECT:
            raise ConflictError(
                f"token {req.id} is `agen up`'s own (local.json): it ends when `agen up` makes a new "
                "one, not by revoking it",
                id=req.id,
            )
        if row.revoked_ms is not None:
            return f"token {req.id} was already revoked"
        tx.execute("UPDATE tokens SET revoked_ms = ? WHERE id = ?", (tx.now_ms, req.id))
        tx.event(SYSTEM_NAMESPACE, "token.revoked", data={"token_id": req.id, "by": p.subject})
        return f"token {req.id} revoked: every Hub refuses it from now on"

    message = await hub.store.write(fn)
    hub.auth.forget_token(req.id)
    return Ok(message=message)


def _manages(p: Principal, row: TokenRow) -> bool:
    """An admin manages the tokens it could have created: all of them without a namespace limit,
    else those limited to some of its own namespaces."""
    if not p.namespaces:
        return True
    namespaces = set(loads(row.namespaces, []))
    return bool(namespaces) and namespaces <= p.namespaces


def _info(row: TokenRow) -> TokenInfo:
    return TokenInfo(
        id=row.id,
        name=row.name,
        kind="local" if row.subject == LOCAL_ADMIN_SUBJECT else "api",
        scopes=loads(row.scopes, []),
        namespaces=loads(row.namespaces, []),
        trust=row.trust,
        created_ms=row.created_ms,
        expires_ms=row.expires_ms,
        on_behalf=row.on_behalf,
        deployment=row.subject if row.on_behalf else None,
        revoked_ms=row.revoked_ms,
    )


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
    so an admin token limited to some of them is refused (the registry's ``every_namespace``)."""
    hub.request_shutdown()
    return Ok(message="draining")


async def rotate_token_key(
    hub: Hub, p: Principal, req: RotateTokenKeyRequest
) -> RotateTokenKeyResponse:
    """`agen hub rotate-token-key` (seed 000 §10): the keys sign every namespace's tokens, so an
    admin token limited to some of them is refused (the registry's ``every_namespace``)."""
    from agen.hub.call_keys import GRACE_MS
    from agen.hub.call_keys import rotate_token_key as rotate

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
