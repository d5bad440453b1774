"""The Hub's TLS (seed 000 §10): a CA kept in the Store (shared by every Hub on it), a server
certificate issued from it at each start, and the CA's hash that clients pin with ``--ca-hash``.

The CA (an EC P-256 key, ten years) is made on the first ``agen hub serve --tls`` and stored in
``hub_keys``, its key sealed under the KEK when one is set (agen.hub.sealing). The server certificate
names localhost, 127.0.0.1, ::1, the listen host and every ``--tls-host``. A client that pins
``sha256:<hex of the CA certificate's DER>`` fetches ``/ca.pem`` once, checks the hash, and from then
on verifies the Hub's certificate against that CA only (agen.client).

The same CA signs Nest client certificates (mTLS): a Nest sends a CSR for a key it made itself with
EnrolNest (and RenewNestCertificate later), and the Hub signs it for ``--nest-cert-lifetime`` (30 days
by default), naming the Nest. The server asks every client for a certificate of this CA (optional at
the TLS layer: API clients use bearer tokens); agen.hub.nest_certs says which Nest each one is.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agen.crypto.cahash import ca_hash_of
from agen.crypto.pem import private_key_pem, to_pem
from agen.hub.sealing import kek_from_env, seal, unseal
from agen.store import Store, Tx

if TYPE_CHECKING:
    from cryptography import x509

log = logging.getLogger("agen.hub.tls")
CA_CERT, CA_KEY = "ca_cert", "ca_key"
NEST_CERT_LIFETIME_MS = 30 * 86_400_000
"""How long a Nest certificate is valid (``agen hub serve --nest-cert-lifetime``); Nests renew before."""
MIN_NEST_CERT_LIFETIME_MS, MAX_NEST_CERT_LIFETIME_MS = 3_600_000, 365 * 86_400_000
MAX_CSR_CHARS = 8_000
_CLOCK_SKEW = dt.timedelta(minutes=5)  # certificates start a little in the past: clocks differ


@dataclass(frozen=True)
class HubTls:
    ca_pem: str
    ca_hash: str
    cert_file: Path
    key_file: Path
    ca_file: Path  # the CA alone: what the server checks client certificates against
    ca_key_pem: str


@dataclass(frozen=True)
class IssuedCert:
    pem: str
    fingerprint: str  # sha256:<hex of the DER>, the Nest's identity
    serial: str
    not_after_ms: int


class NestCa:
    """The Hub CA as the signer of Nest client certificates (held in memory by a TLS Hub)."""

    def __init__(self, ca_cert_pem: str, ca_key_pem: str, lifetime_ms: int) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        self.ca_pem = ca_cert_pem
        self.lifetime_ms = lifetime_ms
        self._cert = x509.load_pem_x509_certificate(ca_cert_pem.encode())
        key = serialization.load_pem_private_key(ca_key_pem.encode(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        self._key = key

    def sign(
        self,
        csr: x509.CertificateSigningRequest,
        *,
        nest_id: str,
        name: str,
        now: dt.datetime | None = None,
    ) -> IssuedCert:
        """A client certificate for the CSR's key, named after the Nest (the CSR's own subject is not
        used: the Hub says who the key belongs to), valid from ``now`` (the present) for the lifetime."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        now = now or dt.datetime.now(dt.UTC)
        not_after = now + dt.timedelta(milliseconds=self.lifetime_ms)
        serial = x509.random_serial_number()
        cert = (
            x509.CertificateBuilder()
            .subject_name(
                x509.Name(
                    [
                        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "agen nest"),
                        x509.NameAttribute(NameOID.COMMON_NAME, name),
                    ]
                )
            )
            .issuer_name(self._cert.subject)
            .public_key(csr.public_key())
            .serial_number(serial)
            .not_valid_before(now - _CLOCK_SKEW)
            .not_valid_after(not_after)
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.UniformResourceIdentifier(f"urn:agen:nest:{nest_id}")]
                ),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        text = to_pem(cert)
        return IssuedCert(
            pem=text,
            fingerprint=ca_hash_of(text),
            serial=format(serial, "x"),
            not_after_ms=int(not_after.timestamp() * 1000),
        )


def parse_csr(pem: str) -> x509.CertificateSigningRequest:
    """A Nest's CSR, checked: PEM, self-signed by its key (proof the sender holds it), a key type the
    Hub signs (EC P-256/P-384, Ed25519, RSA of 2048 bits or more)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    from agen.errors import InvalidError

    try:
        csr = x509.load_pem_x509_csr(pem.encode())
    except ValueError:
        raise InvalidError(
            "csr is not a PEM certificate signing request (-----BEGIN CERTIFICATE REQUEST-----)",
            field="csr",
        ) from None
    if not csr.is_signature_valid:
        raise InvalidError("csr: its signature does not verify with its own key", field="csr")
    key = csr.public_key()
    ok = (
        (
            isinstance(key, ec.EllipticCurvePublicKey)
            and key.curve.name in ("secp256r1", "secp384r1")
        )
        or isinstance(key, ed25519.Ed25519PublicKey)
        or (isinstance(key, rsa.RSAPublicKey) and key.key_size >= 2048)
    )
    if not ok:
        raise InvalidError(
            "csr: the Hub signs EC P-256/P-384, Ed25519 or RSA (2048 bits or more) keys only",
            field="csr",
        )
    return csr


def _new_ca(now: dt.datetime) -> tuple[str, str]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agen hub CA")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return to_pem(cert), private_key_pem(key)


async def ensure_ca(store: Store) -> tuple[str, str]:
    """The store's CA (certificate PEM, key PEM), made on first use; two Hubs starting together agree."""
    kek = kek_from_env()
    now = dt.datetime.now(dt.UTC)
    cert_pem, key_pem = _new_ca(now)

    def fn(tx: Tx) -> tuple[str, str]:
        for name, value in ((CA_CERT, cert_pem), (CA_KEY, seal(CA_KEY, key_pem, kek))):
            tx.execute(
                "INSERT INTO hub_keys (name, value, created_ms) VALUES (?,?,?)"
                " ON CONFLICT (name) DO NOTHING",
                (name, value, tx.now_ms),
            )
        cert = tx.scalar("SELECT value FROM hub_keys WHERE name = ?", (CA_CERT,))
        key = tx.scalar("SELECT value FROM hub_keys WHERE name = ?", (CA_KEY,))
        return str(cert), str(key)

    cert, stored_key = await store.write(fn)
    return cert, unseal(CA_KEY, stored_key, kek)


def _san(host: str) -> x509.GeneralName:
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def issue_server_cert(ca_cert_pem: str, ca_key_pem: str, hosts: list[str]) -> tuple[str, str]:
    """A server certificate for ``hosts`` (30 days; re-issued at every start), signed by the CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem.encode())
    ca_key = serialization.load_pem_private_key(ca_key_pem.encode(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    names = list(dict.fromkeys(hosts))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName([_san(h) for h in names]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return to_pem(cert), private_key_pem(key)


async def prepare(store: Store, folder: Path, hosts: list[str]) -> HubTls:
    """CA from the store, a fresh server certificate in ``folder`` (key 0600) for uvicorn, and the CA
    alone beside it (what client certificates are checked against)."""
    from agen.util.home import write_private

    if kek_from_env() is None:
        log.warning(
            "agen hub: TLS without AGEN_HUB_KEK: the CA key is stored unsealed in the store; set "
            "AGEN_HUB_KEK (the same on every Hub) to seal it"
        )
    ca_cert, ca_key = await ensure_ca(store)
    cert, key = issue_server_cert(ca_cert, ca_key, ["localhost", "127.0.0.1", "::1", *hosts])
    cert_file, key_file, ca_file = folder / "server.pem", folder / "server.key", folder / "ca.pem"
    write_private(key_file, key)
    write_private(cert_file, cert + ca_cert)
    write_private(ca_file, ca_cert)
    return HubTls(
        ca_pem=ca_cert,
        ca_hash=ca_hash_of(ca_cert),
        cert_file=cert_file,
        key_file=key_file,
        ca_file=ca_file,
        ca_key_pem=ca_key,
    )
