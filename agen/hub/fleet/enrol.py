"""Enrolling Nests that run in other processes or on other machines (seed 000 §10).

An admin makes a single-use join token (``agen join-token create``); ``agen nest run --join-token T``
presents it once to EnrolNest, which in one transaction uses the token up, registers the Nest (with the
join token's labels, then its own) and mints the Nest's credential: a ``nest`` token bound to that Nest's
id, with the nest scope only. The Nest keeps it (0600) and uses it from then on. On a TLS Hub the same
transaction signs the Nest's CSR: its client certificate (agen.hub.nest_certs), which every Nest call
must carry beside the credential. Revoking a Nest ends its credential, its certificates, its assignments
and its leases; a revoked Nest never comes back under that name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from agen.domain import columns
from agen.errors import ConflictError, NotFoundError, UnauthenticatedError
from agen.hub import nest_certs
from agen.hub.auth import Principal, hash_token, new_secret
from agen.hub.fleet.instances import register_nest, void_nest_work
from agen.hub.leadership import SYSTEM_NAMESPACE
from agen.store import Tx, dumps, loads
from agen.store.base import new_ulid

if TYPE_CHECKING:
    from cryptography import x509

    from agen.hub.tls import IssuedCert, NestCa

DEFAULT_JOIN_TTL_MS = 3_600_000


class _Nest(NamedTuple):
    id: str
    name: str
    state: str


class _TokenId(NamedTuple):
    id: str


@dataclass(frozen=True)
class Enrolled:
    nest_id: str
    token: str
    labels: dict[str, str]
    certificate: IssuedCert | None = None


def create_join_token(
    tx: Tx, *, ttl_ms: int, labels: dict[str, str], name: str | None, created_by: str
) -> tuple[str, str, int]:
    """A single-use join token: (id, secret, expires_ms). Only its hash is stored; who made it is in the
    event log (``nest.join_token``)."""
    token_id, secret = new_ulid(), new_secret()
    expires = tx.now_ms + ttl_ms
    tx.execute(
        "INSERT INTO tokens (id, name, kind, hash, scopes, namespaces, trust, labels,"
        " created_ms, expires_ms) VALUES (?,?, 'join', ?, '[]', '[]', 'trusted', ?, ?, ?)",
        (token_id, name, hash_token(secret), dumps(labels), tx.now_ms, expires),
    )
    tx.event(
        SYSTEM_NAMESPACE,
        "nest.join_token",
        data={"token_id": token_id, "by": created_by, "expires_ms": expires, "labels": labels},
    )
    return token_id, secret, expires


def enrol_nest(
    tx: Tx,
    join: Principal,
    *,
    name: str,
    capacity: int,
    labels: dict[str, str],
    csr: tuple[NestCa, x509.CertificateSigningRequest] | None = None,
) -> Enrolled:
    """Use up ``join`` and enrol the Nest ``name``; its credential is returned once, and with ``csr``
    (a TLS Hub's CA and the Nest's request) its certificate, signed in this same transaction."""
    used = tx.execute(
        "UPDATE tokens SET revoked_ms = ?, last_used_ms = ? WHERE id = ? AND kind = 'join'"
        " AND revoked_ms IS NULL",
        (tx.now_ms, tx.now_ms, join.id),
    )
    if used != 1:  # two Nests raced on one token: the second finds it used
        raise UnauthenticatedError(
            f"the join token {join.id} was already used (join tokens are single-use); create another "
            "with `agen join-token create`"
        )
    existing = tx.row(_Nest, f"SELECT {columns(_Nest)} FROM nests WHERE name = ?", (name,))
    if existing is not None and existing.state == "revoked":
        raise ConflictError(
            f"nest {name!r} ({existing.id}) was revoked and cannot come back; start it with "
            "another --name",
            nest=name,
        )
    joined = tx.scalar("SELECT labels FROM tokens WHERE id = ?", (join.id,))
    merged = {**loads(joined, {}), **labels}
    nest_id = register_nest(tx, name, capacity=capacity, labels=merged)
    tx.execute(  # an earlier credential of this Nest (enrolled again with a new join token) ends
        "UPDATE tokens SET revoked_ms = ? WHERE kind = 'nest' AND subject = ? AND revoked_ms IS NULL",
        (tx.now_ms, nest_id),
    )
    nest_certs.end_all(tx, nest_id, "replaced")
    issued = None
    if csr is not None:
        ca, request = csr
        issued = ca.sign(request, nest_id=nest_id, name=name)
        nest_certs.record(tx, nest_id, issued)
    token_id, secret = new_ulid(), new_secret()
    tx.execute(
        "INSERT INTO tokens (id, name, kind, hash, scopes, namespaces, trust, subject, created_ms)"
        " VALUES (?,?, 'nest', ?, '[\"nest\"]', '[]', 'trusted', ?, ?)",
        (token_id, f"nest {name}", hash_token(secret), nest_id, tx.now_ms),
    )
    tx.event(
        SYSTEM_NAMESPACE,
        "nest.enrolled",
        data={
            "nest_id": nest_id,
            "name": name,
            "labels": merged,
            "join_token": join.id,
            "certificate": issued.fingerprint if issued else None,
        },
    )
    return Enrolled(nest_id=nest_id, token=secret, labels=merged, certificate=issued)


def renew_certificate(
    tx: Tx, ca: NestCa, csr: x509.CertificateSigningRequest, nest_id: str
) -> IssuedCert:
    """A new certificate for an enrolled Nest, pending until it is first used (agen.hub.nest_certs)."""
    row = tx.row(_Nest, f"SELECT {columns(_Nest)} FROM nests WHERE id = ?", (nest_id,))
    if row is None or row.state == "revoked":
        raise UnauthenticatedError(
            f"nest {nest_id} is revoked or unknown: it gets no certificate", nest_id=nest_id
        )
    nest_certs.end_unused(tx, nest_id)
    issued = ca.sign(csr, nest_id=nest_id, name=row.name)
    nest_certs.record(tx, nest_id, issued)
    return issued


def revoke_nest(tx: Tx, nest_id: str, *, by: str) -> tuple[str, str, set[str]]:
    """Revoke a Nest: its credentials and certificates end, its assignments go, its leases are released (the tasks run
    elsewhere) and it is marked revoked for good. Returns (id, name, the revoked token ids)."""
    row = tx.row(
        _Nest, f"SELECT {columns(_Nest)} FROM nests WHERE id = ? OR name = ?", (nest_id, nest_id)
    )
    if row is None:
        raise NotFoundError(
            f"no nest {nest_id!r}; `agen nests` lists them with their ids", nest=nest_id
        )
    nid, name = row.id, row.name
    tokens = {
        t.id
        for t in tx.rows(
            _TokenId,
            "SELECT id FROM tokens WHERE kind = 'nest' AND subject = ? AND revoked_ms IS NULL",
            (nid,),
        )
    }
    tx.execute(
        "UPDATE tokens SET revoked_ms = ? WHERE kind = 'nest' AND subject = ? AND revoked_ms IS NULL",
        (tx.now_ms, nid),
    )
    nest_certs.end_all(tx, nid, "revoked")
    tx.execute("UPDATE nests SET state = 'revoked' WHERE id = ?", (nid,))
    tx.execute("DELETE FROM assignments WHERE nest_id = ?", (nid,))
    void_nest_work(tx, nid, name, "revoked", count_attempt=False)
    tx.event(
        SYSTEM_NAMESPACE,
        "nest.revoked",
        severity="warning",
        data={"nest_id": nid, "name": name, "by": by},
    )
    return nid, name, tokens
