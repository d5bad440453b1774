"""Nest client certificates (seed 000 §10): which Nest a certificate names, and when it stops working.

On a TLS Hub a Nest's calls carry its ``nest`` credential and a client certificate from the Hub CA
(agen.hub.tls signs it from the Nest's CSR). Its fingerprint, ``sha256:<hex of the DER>``, is the
Nest's identity: a certificate counts only if it is in ``nest_certs`` for the Nest the credential is
bound to, not ended and not expired. A renewed certificate is pending until the Nest first uses it;
that first use ends the certificates before it (``renewed``), so a Nest whose renewal reply was lost
still works with the old one and may ask again (the unused one it never saw ends, ``superseded``).
Enrolling again ends them all (``replaced``), and so does revoking the Nest (``revoked``).
"""

from __future__ import annotations

from typing import NamedTuple

from agen.domain import columns
from agen.hub.tls import IssuedCert
from agen.store import Tx

ENDED = {
    "renewed": "was replaced by a renewed certificate, which the Nest has used since",
    "superseded": "was superseded by a later renewal before it was ever used",
    "replaced": "was replaced when the Nest enrolled again with a join token",
    "revoked": "belongs to a revoked Nest (`agen nests revoke`); a revoked Nest does not come back",
}


class NestCert(NamedTuple):
    """A row of ``nest_certs``: whose certificate it is, and whether it still counts."""

    fingerprint: str
    nest_id: str
    not_after_ms: int
    first_used_ms: int | None
    ended_ms: int | None
    end_reason: str | None


class _Fingerprint(NamedTuple):
    fingerprint: str


def record(tx: Tx, nest_id: str, issued: IssuedCert) -> None:
    """Keep a certificate just signed for ``nest_id`` (pending until first used)."""
    tx.execute(
        "INSERT INTO nest_certs (fingerprint, nest_id, serial, not_after_ms, created_ms)"
        " VALUES (?,?,?,?,?)",
        (issued.fingerprint, nest_id, issued.serial, issued.not_after_ms, tx.now_ms),
    )


def end_all(tx: Tx, nest_id: str, reason: str) -> None:
    """End every live certificate of the Nest (it enrolled again, or was revoked)."""
    tx.execute(
        "UPDATE nest_certs SET ended_ms = ?, end_reason = ? WHERE nest_id = ? AND ended_ms IS NULL",
        (tx.now_ms, reason, nest_id),
    )


def end_unused(tx: Tx, nest_id: str) -> None:
    """Before a renewal: certificates issued and never used (a reply the Nest never got) end."""
    tx.execute(
        "UPDATE nest_certs SET ended_ms = ?, end_reason = 'superseded' WHERE nest_id = ?"
        " AND ended_ms IS NULL AND first_used_ms IS NULL",
        (tx.now_ms, nest_id),
    )


def has_any(tx: Tx, nest_id: str) -> bool:
    """Whether this Nest ever had a certificate (no: it enrolled before the Hub issued them)."""
    return tx.scalar("SELECT 1 FROM nest_certs WHERE nest_id = ? LIMIT 1", (nest_id,)) is not None


def find(tx: Tx, fingerprint: str) -> NestCert | None:
    return tx.row(
        NestCert,
        f"SELECT {columns(NestCert)} FROM nest_certs WHERE fingerprint = ?",
        (fingerprint,),
    )


def first_use(tx: Tx, cert: NestCert) -> tuple[NestCert | None, set[str]]:
    """The certificate's first use: from now on it is the Nest's one certificate, and the ones before it
    end. Returns the certificate as it now is (None if it went meanwhile) and the fingerprints ended."""
    if (
        tx.execute(
            "UPDATE nest_certs SET first_used_ms = ? WHERE fingerprint = ? AND first_used_ms IS NULL"
            " AND ended_ms IS NULL",
            (tx.now_ms, cert.fingerprint),
        )
        == 0
    ):
        return find(tx, cert.fingerprint), set()
    ended = {
        r.fingerprint
        for r in tx.rows(
            _Fingerprint,
            "SELECT fingerprint FROM nest_certs WHERE nest_id = ? AND fingerprint != ?"
            " AND ended_ms IS NULL",
            (cert.nest_id, cert.fingerprint),
        )
    }
    if ended:
        tx.execute(
            "UPDATE nest_certs SET ended_ms = ?, end_reason = 'renewed' WHERE nest_id = ?"
            " AND fingerprint != ? AND ended_ms IS NULL",
            (tx.now_ms, cert.nest_id, cert.fingerprint),
        )
        tx.event(
            "default",
            "nest.certificate_renewed",
            data={
                "nest_id": cert.nest_id,
                "fingerprint": cert.fingerprint,
                "not_after_ms": cert.not_after_ms,
            },
        )
    return find(tx, cert.fingerprint), ended
