"""Who is calling and what they may do: bearer API tokens, scopes and namespace limits.

Tokens are ``agen_`` + 32 random bytes (urlsafe); only their SHA-256 is stored, so a
leaked database does not leak credentials. Scopes: viewer reads; operator deploys,
runs, scales and cancels; approver decides approvals; nest is a Nest's credential (the Nest-facing
RPCs and WhoAmI, nothing else); admin does everything.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from agen.errors import DeniedError, InvalidError, UnauthenticatedError
from agen.store import Store, Tx, dumps, loads, new_ulid

TOKEN_PREFIX = "agen_"
SCOPES = ("viewer", "operator", "approver", "admin", "nest")
TRUSTS = ("operator", "trusted", "untrusted")


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (any case), or None: the one parser
    for API calls, the event stream and webhook bearer secrets."""
    value = headers.get("authorization") or headers.get("Authorization") or ""
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. ``namespaces`` empty means every namespace."""

    id: str
    name: str | None
    scopes: frozenset[str]
    namespaces: frozenset[str] = field(default_factory=frozenset)
    trust: str = "trusted"
    kind: str = "api"

    @property
    def subject(self) -> str:
        """Who this caller is in the records (tasks.submitted_by, runs/approvals.requested_by, decided_by):
        ``local-admin`` for the local ``agen up``'s own admin, ``token:<id>`` for any other token."""
        return LOCAL_ADMIN_SUBJECT if self.kind == "local" else f"token:{self.id}"

    def allows(self, scope: str) -> bool:
        """admin implies every scope; operator and approver both imply viewer; ``any`` (WhoAmI) needs
        only a valid token. ``nest`` implies nothing else: a Nest's token cannot read or submit."""
        if scope == "any" or "admin" in self.scopes or scope in self.scopes:
            return True
        return scope == "viewer" and bool(self.scopes & {"operator", "approver"})

    def require(self, scope: str, what: str) -> None:
        if not self.allows(scope):
            have = ", ".join(sorted(self.scopes)) or "none"
            raise DeniedError(
                f"{what} needs the {scope} scope; this token has {have}. "
                f"Create one with `agen token create --scope {scope}`.",
                scope=scope,
            )

    def sees(self, namespace: str) -> bool:
        return not self.namespaces or namespace in self.namespaces

    def require_namespace(self, namespace: str) -> None:
        if not self.sees(namespace):
            raise DeniedError(
                f"this token is limited to namespaces {', '.join(sorted(self.namespaces))}; "
                f"namespace {namespace!r} is outside them",
                namespace=namespace,
            )


LOCAL_ADMIN_SUBJECT = "local-admin"
LOCAL_ADMIN = Principal(
    id="local", name="local", scopes=frozenset({"admin"}), trust="operator", kind="local"
)
LOCAL_NEST = Principal(id="local-nest", name="local nest", scopes=frozenset({"nest"}), kind="nest")
"""The credential of the Nest that runs in the Hub's own process: the Nest-facing RPCs only."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def mark_local_admin(tx: Tx, secret: str) -> None:
    """The token ``agen up`` made for its own user (local.json): it authenticates as the local admin."""
    tx.execute(
        "UPDATE tokens SET subject = ? WHERE hash = ? AND kind = 'api'",
        (LOCAL_ADMIN_SUBJECT, hash_token(secret)),
    )


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def insert_token(
    tx: Tx,
    *,
    scopes: list[str],
    namespaces: list[str] | None = None,
    name: str | None = None,
    ttl_ms: int | None = None,
    trust: str = "trusted",
    kind: str = "api",
) -> tuple[str, str]:
    """Store a new token (hash only); returns (id, secret). The secret is never readable again."""
    bad = [s for s in scopes if s not in SCOPES]
    if bad or not scopes:
        raise InvalidError(
            f"scope must be one of {', '.join(SCOPES)} (got {', '.join(bad) or 'none'})",
            field="scope",
        )
    if trust not in TRUSTS:
        raise InvalidError(
            f"trust must be one of {', '.join(TRUSTS)} (got {trust!r})", field="trust"
        )
    token_id, secret = new_ulid(), new_secret()
    expires = tx.now_ms + ttl_ms if ttl_ms is not None else None
    tx.execute(
        "INSERT INTO tokens (id, name, kind, hash, scopes, namespaces, trust, created_ms, expires_ms)"
        " VALUES (?,?,?,?,?,?,?,?,?)",
        (
            token_id,
            name,
            kind,
            hash_token(secret),
            dumps(sorted(set(scopes))),
            dumps(sorted(set(namespaces or []))),
            trust,
            tx.now_ms,
            expires,
        ),
    )
    return token_id, secret


class Authenticator:
    """Resolves bearer tokens to principals, with a short cache so hot paths skip the Store."""

    CACHE_MS = 5_000
    local_admin = LOCAL_ADMIN
    """Who an in-process call is when it names no one (the client reads it here, not by import)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._cache: dict[str, tuple[Principal, int, int | None]] = {}

    async def authenticate(self, token: str | None, now_ms: int) -> Principal:
        if not token:
            raise UnauthenticatedError(
                "no API token: pass --token (or AGEN_TOKEN), or run against the local `agen up`"
            )
        digest = hash_token(token)
        hit = self._cache.get(digest)
        if hit is not None and hit[1] > now_ms and (hit[2] is None or hit[2] > now_ms):
            return hit[0]
        row = await self._store.one("SELECT * FROM tokens WHERE hash = ?", (digest,))
        if row is None or row["kind"] not in ("api",) or row["revoked_ms"] is not None:
            raise UnauthenticatedError(
                "the API token is not valid (unknown or revoked); create one with `agen token create`"
            )
        expires = row["expires_ms"]
        if expires is not None and expires <= now_ms:
            raise UnauthenticatedError(
                f"the API token {row['id']} expired; create a new one with `agen token create`"
            )
        principal = Principal(
            id=row["id"],
            name=row["name"],
            scopes=frozenset(loads(row["scopes"], [])),
            namespaces=frozenset(loads(row["namespaces"], [])),
            trust=row["trust"],
            kind="local" if row["subject"] == LOCAL_ADMIN_SUBJECT else "api",
        )
        self._cache[digest] = (principal, now_ms + self.CACHE_MS, expires)
        return principal
