"""A Nest's client certificate for a TLS Hub (mTLS, seed 000 §10): made, kept, presented, renewed.

The key is made here and never leaves the Nest: EnrolNest (and RenewNestCertificate later) carries a
CSR for it, and the Hub signs the certificate. Certificate and key are kept together in one 0600 file
of the Nest's data folder (``nest-cert.pem``, replaced in one rename), beside the Hub CA it was handed
(checked against the pinned ``--ca-hash``). Every call the Nest makes with its own credential presents
the certificate; the Hub's certificate is checked against that CA alone.

Renewal: when less than ``--cert-renew-before`` (10 days) remains, a fresh key's CSR goes to the Hub
over the current connection, the new certificate is saved, and the Nest's transports move to it for
their next calls (calls in flight finish on the old one). The Hub keeps the old one working until the
new one is first used, so a renewal whose reply is lost is simply asked again.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import ssl
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agen.crypto.cahash import ca_hash_of
from agen.crypto.pem import private_key_pem, to_pem
from agen.errors import AgenError, DeniedError, InvalidError
from agen.util.home import write_private

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agen.api.registry import Rpc
    from agen.client import Client, Transport

log = logging.getLogger("agen.nest")
CERT_FILE = "nest-cert.pem"
_END_CERT = "-----END CERTIFICATE-----"
RENEW_BEFORE_MS = 10 * 86_400_000
"""``agen nest run --cert-renew-before``: renew when less than this remains."""
RENEW_CHECK_S = 300.0
"""How often the Nest looks at its certificate's expiry (a comparison; it calls the Hub only to renew)."""


def new_key_and_csr(name: str) -> tuple[str, str]:
    """A fresh EC P-256 key (PEM) and a CSR for it; the Hub names the certificate, not the CSR."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .sign(key, hashes.SHA256())
    )
    return private_key_pem(key), to_pem(csr)


def check_issued(cert_pem: str, key_pem: str, ca_pem: str) -> int:
    """The certificate the Hub handed back is for our key and signed by the CA: its expiry (ms)."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate(cert_pem.encode())
        ca = x509.load_pem_x509_certificate(ca_pem.encode())
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature) as e:
        raise DeniedError(f"the Hub handed back a certificate its CA did not sign ({e})") from None
    key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if cert.public_key().public_bytes(*spki) != key.public_key().public_bytes(*spki):
        raise DeniedError("the Hub handed back a certificate for another key than this Nest's")
    return int(cert.not_valid_after_utc.timestamp() * 1000)


class NestTls:
    """This Nest's certificate, key and Hub CA: the TLS contexts its calls use."""

    def __init__(self, folder: Path, ca_pem: str) -> None:
        self.path = folder / CERT_FILE
        self.ca_pem = ca_pem
        self.generation = 0  # goes up at each renewal: transports move to the new certificate
        self._context, self.fingerprint, self.not_after_ms = self._load()

    @property
    def ca_hash(self) -> str:
        return ca_hash_of(self.ca_pem)

    @classmethod
    def save(cls, folder: Path, ca_pem: str, cert_pem: str, key_pem: str) -> NestTls:
        check_issued(cert_pem, key_pem, ca_pem)
        write_private(folder / CERT_FILE, cert_pem + key_pem)
        return cls(folder, ca_pem)

    def _load(self) -> tuple[ssl.SSLContext, str, int]:
        """The saved certificate as a TLS context, with its fingerprint and expiry (ms)."""
        from cryptography import x509

        try:
            text = self.path.read_text()
            cert_pem = text[: text.index(_END_CERT) + len(_END_CERT)]
            cert = x509.load_pem_x509_certificate(cert_pem.encode())
            context = ssl.create_default_context(cadata=self.ca_pem)
            context.load_cert_chain(self.path)
        except (OSError, ValueError, ssl.SSLError) as e:
            raise InvalidError(
                f"{self.path}: not this Nest's certificate and key ({e}); delete the Nest's data "
                "folder's nest.json and enrol again with --join-token",
                file=str(self.path),
            ) from None
        not_after = int(cert.not_valid_after_utc.timestamp() * 1000)
        return context, ca_hash_of(cert_pem), not_after

    def context(self) -> ssl.SSLContext:
        """Trusts the Hub CA alone, and presents this Nest's current certificate."""
        return self._context

    def renewed(self, cert_pem: str, key_pem: str) -> None:
        """Keep the renewed certificate (one rename: a crash leaves the old or the new, whole)."""
        check_issued(cert_pem, key_pem, self.ca_pem)
        write_private(self.path, cert_pem + key_pem)
        self._context, self.fingerprint, self.not_after_ms = self._load()
        self.generation += 1


class CertTransport:
    """A transport to the Hub(s) that presents the Nest's current certificate: after a renewal the next
    call goes out on a new one, and the old one closes when its calls in flight are done."""

    def __init__(self, tls: NestTls, make: Callable[[ssl.SSLContext], Transport]) -> None:
        self._tls, self._make = tls, make
        self._generation = tls.generation
        self._current = make(tls.context())
        self._busy: dict[int, int] = {}
        self._retired: list[Transport] = []

    @property
    def url(self) -> str | None:
        return getattr(self._current, "url", None)

    async def call(self, rpc: Rpc[Any, Any], request: BaseModel) -> BaseModel:
        if self._generation != self._tls.generation:
            self._retired.append(self._current)
            self._current, self._generation = self._make(self._tls.context()), self._tls.generation
            await self._close_idle()
        transport = self._current
        self._busy[id(transport)] = self._busy.get(id(transport), 0) + 1
        try:
            return await transport.call(rpc, request)
        finally:
            self._busy[id(transport)] -= 1
            if transport is not self._current:
                await self._close_idle()

    async def _close_idle(self) -> None:
        idle = [t for t in self._retired if not self._busy.get(id(t))]
        self._retired = [t for t in self._retired if self._busy.get(id(t))]
        for transport in idle:
            self._busy.pop(id(transport), None)
            await transport.aclose()

    async def aclose(self) -> None:
        for transport in (*self._retired, self._current):
            await transport.aclose()
        self._retired = []


async def renew(tls: NestTls, client: Client, nest_id: str, name: str) -> None:
    """Renew now: a fresh key, its CSR over the current connection, the new certificate saved."""
    from agen.api import registry as r
    from agen.wire.nests import RenewNestCertificateRequest

    key_pem, csr_pem = new_key_and_csr(name)
    resp = await client.call(
        r.RenewNestCertificate, RenewNestCertificateRequest(nest_id=nest_id, csr=csr_pem)
    )
    tls.renewed(resp.certificate, key_pem)


def when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


async def renew_if_due(
    tls: NestTls, client: Client, nest_id: str, name: str, *, renew_before_ms: int, now_ms: int
) -> bool:
    """Renew if less than ``renew_before_ms`` remains at ``now_ms``; whether it renewed. A failed
    renewal is said and left for the next check: the current certificate still works."""
    if tls.not_after_ms - now_ms >= renew_before_ms:
        return False
    try:
        await renew(tls, client, nest_id, name)
    except AgenError as e:
        log.warning(
            "nest %s: renewing its certificate (expires %s) failed; it tries again at the next "
            "check: %s",
            name,
            when(tls.not_after_ms),
            e,
        )
        return False
    print(
        f"agen nest: nest {name}: certificate renewed, valid until {when(tls.not_after_ms)}",
        file=sys.stderr,
        flush=True,
    )
    if tls.not_after_ms - now_ms < renew_before_ms:
        log.warning(
            "nest %s: the Hub's certificates (--nest-cert-lifetime) last less than "
            "--cert-renew-before, so it renews at every check; shorten --cert-renew-before",
            name,
        )
    return True


async def keep_renewed(
    tls: NestTls,
    client: Client,
    nest_id: str,
    name: str,
    *,
    renew_before_ms: int,
    clock: Callable[[], int],
    check_s: float = RENEW_CHECK_S,
) -> None:
    """For the Nest's life: look at the certificate's expiry every ``check_s`` and renew when due."""
    while True:
        await renew_if_due(
            tls, client, nest_id, name, renew_before_ms=renew_before_ms, now_ms=clock()
        )
        await asyncio.sleep(check_s)
