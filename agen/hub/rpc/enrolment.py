"""The Nest enrolment handlers: join tokens, EnrolNest, certificate renewal, listing and revoking
Nests, and the published call-token keys.

Apart from agen.hub.rpc.nests (the calls every Nest makes on each tick) because they load the
enrolment, certificate and call-key modules (~10 ms under ``-X importtime``), which an embedded
one-shot, serving only its own local Nest, never needs.
"""

from __future__ import annotations

from typing import NamedTuple

from agen.errors import ConflictError, DeniedError, InvalidError
from agen.hub.auth import Principal
from agen.hub.call_keys import published_keys
from agen.hub.fleet import enrol
from agen.hub.rpc.nests import own_nest
from agen.hub.service import Hub
from agen.hub.tls import parse_csr
from agen.store import loads
from agen.store.records import Count
from agen.wire import nests as m
from agen.wire.common import Empty, Ok


class _NestRow(NamedTuple):
    """A row of ``nests`` and how many live instances it runs."""

    id: str
    name: str
    labels: str  # JSON text
    capacity: int
    state: str
    live: Count
    last_heartbeat_ms: int
    created_ms: int


async def get_token_keys(hub: Hub, p: Principal, req: Empty) -> m.GetTokenKeysResponse:
    """The live call-token keys (next, current, previous) as the Store holds them now, so a key
    another Hub added is published at once."""
    keys = await published_keys(hub.store, hub.clock())
    return m.GetTokenKeysResponse(
        keys=[m.TokenKey(id=k.id, public_key=k.public_raw_b64) for k in keys]
    )


async def create_join_token(
    hub: Hub, p: Principal, req: m.CreateJoinTokenRequest
) -> m.CreateJoinTokenResponse:
    # A Nest runs every namespace's work: only an unlimited admin adds one (``every_namespace``).
    token_id, secret, expires = await hub.store.write(
        lambda tx: enrol.create_join_token(
            tx, ttl_ms=req.ttl_ms, labels=req.labels, name=req.name, created_by=p.subject
        )
    )
    return m.CreateJoinTokenResponse(
        token=secret, id=token_id, expires_ms=expires, labels=req.labels, ca_hash=hub.tls_ca_hash
    )


async def enrol_nest(hub: Hub, p: Principal, req: m.EnrolNestRequest) -> m.EnrolNestResponse:
    # Only a join token reaches here (its scope ``join`` is held by nothing else: agen.hub.auth).
    ca = hub.nest_ca
    if ca is not None and req.csr is None:
        raise InvalidError(
            "this Hub serves TLS: a Nest enrols with a certificate signing request (csr) for a key "
            "it made, and calls with the certificate it gets (mTLS); this `agen nest run` sends none: "
            "upgrade agen on the Nest",
            field="csr",
        )
    # A Hub without TLS (or behind a TLS-terminating proxy) sees no client certificates: it issues a
    # credential alone, and the response says so (certificate None).
    csr = (ca, parse_csr(req.csr)) if ca is not None and req.csr is not None else None
    done = await hub.store.write(
        lambda tx: enrol.enrol_nest(
            tx, p, name=req.name, capacity=req.capacity, labels=req.labels, csr=csr
        )
    )
    hub.auth.forget_nest(done.nest_id)  # an earlier credential of this Nest ended with it
    hub.desired_state_changed()
    cert = done.certificate
    return m.EnrolNestResponse(
        nest_id=done.nest_id,
        token=done.token,
        labels=done.labels,
        certificate=cert.pem if cert else None,
        not_after_ms=cert.not_after_ms if cert else None,
        ca=ca.ca_pem if cert and ca else None,
    )


async def renew_nest_certificate(
    hub: Hub, p: Principal, req: m.RenewNestCertificateRequest
) -> m.RenewNestCertificateResponse:
    own_nest(p, req.nest_id)
    ca = hub.nest_ca
    if ca is None:
        raise ConflictError(
            "this Hub does not serve TLS, so it issues no Nest certificates; there is nothing to renew"
        )
    if p.certificate is None:
        raise DeniedError(
            "a Nest renews its certificate over mTLS, with the certificate it has now",
            nest_id=req.nest_id,
        )
    csr = parse_csr(req.csr)
    issued = await hub.store.write(lambda tx: enrol.renew_certificate(tx, ca, csr, req.nest_id))
    return m.RenewNestCertificateResponse(certificate=issued.pem, not_after_ms=issued.not_after_ms)


async def list_nests(hub: Hub, p: Principal, req: m.ListNestsRequest) -> m.ListNestsResponse:
    rows = await hub.store.rows(
        _NestRow,
        "SELECT n.*, (SELECT COUNT(*) FROM instances i WHERE i.nest_id = n.id"
        " AND i.state NOT IN ('stopped', 'failed')) AS live FROM nests n ORDER BY n.name",
    )
    return m.ListNestsResponse(
        nests=[
            m.NestInfo(
                id=r.id,
                name=r.name,
                labels=loads(r.labels, {}),
                capacity=r.capacity,
                state=r.state,
                instances=r.live,
                last_heartbeat_ms=r.last_heartbeat_ms,
                created_ms=r.created_ms,
            )
            for r in rows
        ]
    )


async def revoke_nest(hub: Hub, p: Principal, req: m.RevokeNestRequest) -> Ok:
    nest_id, name, _ = await hub.store.write(
        lambda tx: enrol.revoke_nest(tx, req.nest, by=p.subject)
    )
    hub.auth.forget_nest(nest_id)
    hub.desired_state_changed()
    hub.work.notify()
    return Ok(
        message=f"nest {name} revoked: its credential, certificates, assignments and leases ended"
    )
