"""Who is calling and what they may do: bearer API tokens, scopes and namespace limits.

Tokens are ``agen_`` + 32 random bytes (urlsafe); only their SHA-256 is stored, so a
leaked database does not leak credentials. Scopes: viewer reads; operator deploys,
runs, scales and cancels; approver decides approvals; nest is a Nest's credential (the Nest-facing
RPCs and WhoAmI, nothing else); admin does everything.

Three kinds of token authenticate: ``api`` (people and scripts), ``nest`` (a Nest's credential, bound to
that Nest's id: it may act only for itself) and ``join`` (single-use, good for EnrolNest only, which
uses it up in the same transaction that enrols the Nest). No API token can hold the nest scope.

On a TLS Hub (``require_nest_certificates``) a ``nest`` credential counts only beside a client certificate
of that same Nest (mTLS, agen.hub.nest_certs): a bearer token alone is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from agen.calltokens import CallIdentity, is_call_token
from agen.crypto.cahash import ca_hash_of
from agen.domain import TaskBrief, TaskState, columns
from agen.errors import DeniedError, InvalidError, UnauthenticatedError
from agen.store import Store, Tx, dumps, loads, new_ulid
from agen.wire.bearer import (
    bearer_token as bearer_token,
)  # re-exported: the one parser (webhook, MCP door)

if TYPE_CHECKING:
    from agen.hub.nest_certs import NestCert

TOKEN_PREFIX = "agen_"
SCOPES = ("viewer", "operator", "approver", "admin", "nest")
USER_SCOPES = ("viewer", "operator", "approver", "admin")
"""What CreateToken may grant: the nest scope comes only from enrolling a Nest with a join token."""
JOIN_SCOPE = "join"
MACHINE_SCOPES = ("nest", JOIN_SCOPE)
"""Scopes only their own kind of credential holds: ``nest`` (an enrolled Nest) and ``join`` (a join
token, for EnrolNest). No user scope implies them, admin included."""
TASK_HEADER = "X-Agen-Task"  # the running task an on-behalf token acts through
TRUSTS = ("operator", "trusted", "untrusted")


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. ``namespaces`` empty means every namespace."""

    id: str
    name: str | None
    scopes: frozenset[str]
    namespaces: frozenset[str] = field(default_factory=frozenset)
    trust: str = "trusted"
    kind: str = "api"
    nest_id: str | None = None
    """A Nest's credential is bound to its Nest: it may report, lease and complete for that Nest only.
    None for the Nest in the Hub's own process (LOCAL_NEST) until it registers by name; its HubPort
    then binds it to that Nest's id (agen.nest.client_port)."""
    on_behalf: bool = False
    """An on-behalf token: every call must name a running task (X-Agen-Task) of its own deployment
    (``acts_through``) and is made as that task's submitter (``act_for_task``)."""
    acts_through: str | None = None
    """An on-behalf token's deployment (``<namespace>/<name>``): the one whose running tasks it may name."""
    for_task: str | None = None
    """Set on the principal an on-behalf token became for one call: the task it acts through."""
    call: CallIdentity | None = None
    """A call token's principal (kind ``call``): it may only reach its one callee deployment, over
    the RPCs an A2A Gateway makes for it (the RPCs declared ``call_token=True`` in agen.api.registry)."""
    certificate: str | None = None
    """A Nest's call over mTLS: the fingerprint of the client certificate it came with."""

    @property
    def subject(self) -> str:
        """Who this caller is in the records (tasks.submitted_by, runs/approvals.requested_by, decided_by):
        ``local-admin`` for the local ``agen up``'s own admin, ``token:<id>`` for any other token."""
        if self.call is not None:  # user:<token id> is that person's token; agent:<ns>/<dep> as is
            caller = self.call.caller
            if caller == f"user:{LOCAL_ADMIN.id}":
                return LOCAL_ADMIN_SUBJECT
            return f"token:{caller[5:]}" if caller.startswith("user:") else caller
        return LOCAL_ADMIN_SUBJECT if self.kind == "local" else f"token:{self.id}"

    def require_callee(self, namespace: str, deployment: str) -> None:
        """A call token reaches only the deployment it names (any other principal: no-op)."""
        if self.call is not None and not self.call.allows(namespace, deployment):
            raise DeniedError(
                f"this call token is for {self.call.callee}, not {namespace}/{deployment}; "
                "resolve that agent for a token of its own",
                namespace=namespace,
            )

    def allows(self, scope: str) -> bool:
        """admin implies every user scope; operator and approver both imply viewer; ``any`` (WhoAmI)
        needs only a valid token. ``nest`` implies nothing else: a Nest's token cannot read or submit.
        The Nest calls (scope ``nest``) take a Nest's own credential and EnrolNest a join token: no
        user token reaches them, however wide (an admin enrols a Nest with a join token)."""
        if scope in MACHINE_SCOPES:
            return self.kind == scope and scope in self.scopes
        if self.on_behalf:  # not yet acting for a task (/mcp tools/list): at most this, never admin
            return scope == "any" or scope in _implied(self.scopes) - {"admin"}
        if scope == "any" or "admin" in self.scopes or scope in self.scopes:
            return True
        return scope == "viewer" and bool(self.scopes & {"operator", "approver"})

    def require(self, scope: str, what: str) -> None:
        if scope == "nest" and not self.allows(scope):
            raise DeniedError(
                f"{what} is a Nest call: only an enrolled Nest's own credential makes it, never a "
                "user token of any scope. To run a Nest, enrol it with a join token: "
                "`agen join-token create`, then `agen nest run --join-token <token>`",
                scope=scope,
            )
        if scope == JOIN_SCOPE and not self.allows(scope):
            raise DeniedError(
                f"{what} takes a join token (single-use, from `agen join-token create`), not this "
                "token",
                scope=scope,
            )
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
CARD_READER = Principal(
    id="local-card-reader",
    name="agen up's Gateway, for an anonymous card",
    scopes=frozenset({"viewer"}),
)
"""What `agen up`'s Gateway reads an agent card as when a local caller asks without a token (seed
000 §10: anonymous callers on `agen up`; only the card, never a call)."""
"""The credential of the Nest that runs in the Hub's own process: the Nest-facing RPCs only."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def mark_local_admin(tx: Tx, secret: str) -> None:
    """The token ``agen up`` made for its own user (local.json): it authenticates as the local admin."""
    tx.execute(
        "UPDATE tokens SET subject = ? WHERE hash = ? AND kind = 'api'",
        (LOCAL_ADMIN_SUBJECT, hash_token(secret)),
    )


class TokenRow(NamedTuple):
    """A row of ``tokens`` as callers are told from it (never its hash, which only finds it)."""

    id: str
    name: str | None
    kind: str  # api, nest, join or webhook
    scopes: str  # JSON list
    namespaces: str  # JSON list; empty: every namespace
    trust: str
    subject: str | None  # a nest token's Nest id; an on-behalf token's deployment
    created_ms: int
    expires_ms: int | None
    revoked_ms: int | None
    on_behalf: bool


TOKEN_COLUMNS = columns(TokenRow)
"""The SELECT list of a TokenRow."""


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
    on_behalf: bool = False,
    acts_through: str | None = None,
) -> tuple[str, str]:
    """Store a new token (hash only); returns (id, secret). The secret is never readable again.
    ``acts_through``: an on-behalf token's deployment (``<namespace>/<name>``), kept as its subject."""
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
        "INSERT INTO tokens (id, name, kind, hash, scopes, namespaces, trust, created_ms, expires_ms,"
        " on_behalf, subject) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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
            int(on_behalf),
            acts_through if on_behalf else None,
        ),
    )
    return token_id, secret


def _implied(scopes: frozenset[str]) -> set[str]:
    """Every scope ``scopes`` allow: admin allows the user scopes, operator and approver allow viewer."""
    out = set(scopes)
    if "admin" in out:
        out |= set(USER_SCOPES)
    if out & {"operator", "approver"}:
        out.add("viewer")
    return out


def _meet(a: frozenset[str], b: frozenset[str]) -> frozenset[str] | None:
    """Namespaces both allow (empty means every namespace); None when they share none."""
    if not a or not b:
        return a or b
    both = a & b
    return both or None


_REVOKED = {
    "api": "the API token {id} was revoked; create one with `agen token create`",
    "nest": "this Nest's credential ({id}) was revoked (`agen nests revoke`); a revoked Nest does not "
    "come back: enrol a new one with a fresh `agen join-token create`",
    "join": "the join token {id} was already used (join tokens are single-use); create another with "
    "`agen join-token create`",
}
_EXPIRED = {
    "api": "the API token {id} expired; create a new one with `agen token create`",
    "nest": "this Nest's credential ({id}) expired; enrol again with `agen join-token create`",
    "join": "the join token {id} expired before it was used; create another with "
    "`agen join-token create --ttl 1h`",
}


TOKEN_CACHE_MS = 2_000
"""How long a verified API or Nest token is taken on its word without reading its row again."""


class _Verified:
    """Principals of the tokens verified lately (SHA-256 -> (principal, good until ms)), one map per Store
    object, so every Hub on it shares it and a revocation through any of them drops the entry at once."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self.entries: dict[str, tuple[Principal, int]] = {}

    def drop(self, gone: Callable[[Principal], bool]) -> None:
        self.entries = {k: v for k, v in self.entries.items() if not gone(v[0])}


_VERIFIED: weakref.WeakKeyDictionary[Store, _Verified] = weakref.WeakKeyDictionary()


class Authenticator:
    """Resolves bearer tokens to principals. A bearer token's row is read from the Store, then its
    principal is remembered for TOKEN_CACHE_MS (a read and a thread hop fewer per request); a token
    revoked through any Hub on this Store object is refused from its next request (the entry is dropped
    with the revocation), one revoked through another process's Hub within TOKEN_CACHE_MS. Live client
    certificates are remembered for ``CACHE_MS``. Join tokens are read every time (single-use)."""

    CACHE_MS = 5_000
    local_admin = LOCAL_ADMIN
    """Who an in-process call is when it names no one (the client reads it here, not by import)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        verified = _VERIFIED.get(store)
        if verified is None:
            verified = _VERIFIED[store] = _Verified()
        self._verified = verified
        self._certs: dict[str, tuple[str, str, int, int]] = {}
        """A live client certificate (PEM, as the TLS layer gave it) -> (fingerprint, nest id, cached
        until, not after): a Nest's calls on one connection check it once per CACHE_MS."""
        self._with_cert: dict[tuple[str, str], tuple[Principal, Principal]] = {}
        """(token id, fingerprint) -> (the token's principal, it with the certificate)."""
        self.require_nest_certificates = False
        """A TLS Hub: Nest credentials count only with their client certificate (Hub.serve_tls)."""

    async def authenticate(
        self, token: str | None, now_ms: int, peer_cert: str | None = None
    ) -> Principal:
        """The principal of a bearer token. On a TLS Hub a Nest's credential also needs ``peer_cert``,
        the TLS client certificate (PEM) the request came with: every door, one rule."""
        principal = await self._token_principal(token, now_ms)
        if principal.kind == "nest" and principal.nest_id and self.require_nest_certificates:
            principal = await self._with_certificate(principal, peer_cert, now_ms)
        return principal

    async def _token_principal(self, token: str | None, now_ms: int) -> Principal:
        if not token:
            raise UnauthenticatedError(
                "no API token: pass --token (or AGEN_TOKEN), or run against the local `agen up`"
            )
        if is_call_token(token):
            return await self._call_principal(token, now_ms)
        digest = hash_token(token)
        hit = self._verified.entries.get(digest)
        if hit is not None and hit[1] > now_ms:
            return hit[0]
        row = await self._store.row(
            TokenRow, f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE hash = ?", (digest,)
        )
        kind = row.kind if row is not None else None
        if row is None or kind not in ("api", "nest", "join"):
            raise UnauthenticatedError(
                "the API token is not valid (unknown or revoked); create one with `agen token create`"
            )
        if row.revoked_ms is not None:
            raise UnauthenticatedError(_REVOKED[kind].format(id=row.id))
        expires = row.expires_ms
        if expires is not None and expires <= now_ms:
            raise UnauthenticatedError(_EXPIRED[kind].format(id=row.id))
        principal = Principal(
            id=row.id,
            name=row.name,
            scopes=frozenset([JOIN_SCOPE] if kind == "join" else loads(row.scopes, [])),
            namespaces=frozenset(loads(row.namespaces, [])),
            trust=row.trust,
            kind="local" if kind == "api" and row.subject == LOCAL_ADMIN_SUBJECT else kind,
            nest_id=row.subject if kind == "nest" else None,
            on_behalf=row.on_behalf,
            acts_through=row.subject if row.on_behalf else None,
        )
        if kind != "join":  # a join token is used up by the request it authenticates
            if len(self._verified.entries) >= _Verified.LIMIT:
                self._verified.entries.clear()
            until = now_ms + TOKEN_CACHE_MS
            self._verified.entries[digest] = (
                principal,
                until if expires is None else min(until, expires),
            )
        return principal

    async def _call_principal(self, token: str, now_ms: int) -> Principal:
        """A call token (seed 000 §10), verified with the keys the Hub publishes (current, next and
        previous: agen.hub.call_keys): the Gateway checked it offline already; the Hub, which
        signed it, is the authority on what it may do."""
        from agen.hub.call_keys import verify_at_hub  # not at import: most Hubs never verify one

        who = await verify_at_hub(self._store, token, now_ms)
        ns, _, _ = who.callee.partition("/")
        return Principal(
            id=who.caller,
            name=who.caller,
            scopes=frozenset({"operator"}),  # narrowed to its callee by dispatch and the handlers
            namespaces=frozenset({ns}),
            trust=who.trust if who.trust in TRUSTS else "untrusted",
            kind="call",
            call=who,
        )

    async def caller(
        self, headers: Mapping[str, str], now_ms: int, peer_cert: str | None = None
    ) -> Principal:
        """Who makes an HTTP request: its bearer token's principal, and for an on-behalf token the
        submitter of the running task its ``X-Agen-Task`` header names (every door, one rule). On a TLS
        Hub a Nest's credential also needs ``peer_cert``, the TLS client certificate (PEM) it came with."""
        principal = await self.authenticate(bearer_token(headers), now_ms, peer_cert)
        if principal.on_behalf:
            principal = await self.act_for_task(principal, headers.get(TASK_HEADER))
        return principal

    async def _with_certificate(
        self, nest: Principal, peer_cert: str | None, now_ms: int
    ) -> Principal:
        """The Nest's principal if ``peer_cert`` is a live certificate of that same Nest (mTLS)."""
        from agen.hub import nest_certs  # not at import: only a TLS Hub checks certificates

        assert nest.nest_id is not None
        if peer_cert is None:
            if not await self._store.read(lambda tx: nest_certs.has_any(tx, str(nest.nest_id))):
                raise UnauthenticatedError(
                    f"nest {nest.nest_id} enrolled before this Hub issued Nest certificates: on a TLS "
                    "Hub a Nest calls with its client certificate (mTLS), and its credential alone is "
                    "refused. Enrol it again (its name, id and labels stay): `agen join-token create` "
                    "on the Hub, then `agen nest run ... --join-token <token>`",
                    nest_id=nest.nest_id,
                )
            raise UnauthenticatedError(
                f"nest {nest.nest_id}: on a TLS Hub a Nest's credential counts only with its client "
                "certificate (mTLS); a bearer token alone is refused",
                nest_id=nest.nest_id,
            )
        hit = self._certs.get(peer_cert)
        if hit is not None and hit[2] > now_ms and hit[3] > now_ms:
            fingerprint, owner = hit[0], hit[1]
        else:
            fingerprint = ca_hash_of(peer_cert)
            cert = await self._check_certificate(fingerprint, now_ms)
            owner = cert.nest_id
            if len(self._certs) > 10_000:  # bounded: entries outlive their connections
                self._certs.clear()
            self._certs[peer_cert] = (fingerprint, owner, now_ms + self.CACHE_MS, cert.not_after_ms)
        if owner != nest.nest_id:
            raise DeniedError(
                f"the client certificate {fingerprint[:19]}… belongs to nest {owner}, not to nest "
                f"{nest.nest_id} whose credential this call carries",
                nest_id=nest.nest_id,
            )
        made = self._with_cert.get((nest.id, fingerprint))
        if made is not None and made[0] == nest:
            return made[1]
        if len(self._with_cert) > 10_000:
            self._with_cert.clear()
        principal = dataclasses.replace(nest, certificate=fingerprint)
        self._with_cert[(nest.id, fingerprint)] = (nest, principal)
        return principal

    async def _check_certificate(self, fingerprint: str, now_ms: int) -> NestCert:
        """A client certificate, if it is live (its first use ends the ones before it)."""
        from agen.hub import nest_certs

        cert = await self._store.read(lambda tx: nest_certs.find(tx, fingerprint))
        if cert is not None and cert.first_used_ms is None and cert.ended_ms is None:
            found = cert
            cert, ended = await self._store.write(lambda tx: nest_certs.first_use(tx, found))
            self._certs = {k: v for k, v in self._certs.items() if v[0] not in ended}
        if cert is None:
            raise UnauthenticatedError(
                f"the client certificate {fingerprint[:19]}… is not one this Hub issued to an enrolled "
                "Nest; enrol the Nest with `agen nest run --join-token`"
            )
        if cert.ended_ms is not None:
            why = nest_certs.ENDED.get(cert.end_reason or "", "was ended")
            raise UnauthenticatedError(
                f"the client certificate {fingerprint[:19]}… of nest {cert.nest_id} {why}",
                nest_id=cert.nest_id,
            )
        if cert.not_after_ms <= now_ms:
            raise UnauthenticatedError(
                f"the client certificate {fingerprint[:19]}… of nest {cert.nest_id} expired; the Nest "
                "renews it before that (--cert-renew-before), or enrols again with a join token",
                nest_id=cert.nest_id,
            )
        return cert

    async def act_for_task(self, agent: Principal, task_id: str | None) -> Principal:
        """The principal an on-behalf token's call is made as: the submitter of the running task it
        names, with the scopes and namespaces both hold (admin never passes through). The task must be
        one its own deployment runs (leased or running there): an agent acts for the people whose work
        it is doing, never for whoever else has a task running somewhere."""
        if not task_id:
            raise DeniedError(
                "this is an on-behalf token: name the running task you act for with the X-Agen-Task "
                "header (over MCP: _meta agen/taskId)"
            )
        if agent.acts_through is None:
            raise DeniedError(
                "this on-behalf token names no deployment (it predates the rule that it must); create "
                "one for the agent's deployment: `agen token create --on-behalf --deployment NAME`",
                task_id=task_id,
            )
        task = await self._store.row(
            TaskBrief, f"SELECT {columns(TaskBrief)} FROM tasks WHERE id = ?", (task_id,)
        )
        if task is None or f"{task.namespace}/{task.deployment}" != agent.acts_through:
            raise DeniedError(  # says nothing of a task elsewhere: not even that it exists
                f"task {task_id} is not a task of {agent.acts_through}: this on-behalf token acts "
                "only through a task its own deployment is running",
                task_id=task_id,
            )
        if task.state not in (TaskState.LEASED, TaskState.RUNNING):
            raise DeniedError(
                f"task {task_id} is {task.state}, not running: an on-behalf token acts only through "
                "a running task of its deployment (one whose run holds the lease)",
                task_id=task_id,
            )
        by = task.submitted_by or ""
        if by == LOCAL_ADMIN_SUBJECT:
            person = LOCAL_ADMIN
        elif by.startswith("token:"):
            row = await self._store.row(
                TokenRow,
                f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE id = ? AND kind = 'api'"
                " AND revoked_ms IS NULL",
                (by.removeprefix("token:"),),
            )
            if row is None:
                raise DeniedError(
                    f"task {task_id} was submitted by {by}, which is no longer valid: nobody to act for",
                    task_id=task_id,
                )
            person = Principal(
                id=row.id,
                name=row.name,
                scopes=frozenset(loads(row.scopes, [])),
                namespaces=frozenset(loads(row.namespaces, [])),
                trust=row.trust,
            )
        else:
            raise DeniedError(
                f"task {task_id} was started by {by or 'nobody'}, not a person: an on-behalf token has "
                "nobody to act for",
                task_id=task_id,
            )
        scopes = (_implied(agent.scopes) & _implied(person.scopes)) - {"admin"}
        namespaces = _meet(agent.namespaces, person.namespaces)
        if namespaces is None:
            raise DeniedError(
                f"the on-behalf token and {person.subject} share no namespace", task_id=task_id
            )
        return Principal(
            id=person.id,
            name=person.name,
            scopes=frozenset(scopes),
            namespaces=namespaces,
            trust=max(agent.trust, person.trust, key=TRUSTS.index),  # the lower trust
            kind=person.kind,
            for_task=task_id,
        )

    def forget_token(self, token_id: str) -> None:
        """A token was revoked: its next request reads its row again (and is refused)."""
        self._verified.drop(lambda p: p.id == token_id)

    def forget_nest(self, nest_id: str) -> None:
        """Drop a Nest's credentials and certificates from the caches at once (revoked, or enrolled
        again, which ends its earlier credential): a revoked Nest must not get a few more seconds."""
        self._certs = {k: v for k, v in self._certs.items() if v[1] != nest_id}
        self._verified.drop(lambda p: p.nest_id == nest_id)
