"""The Hub's TLS (seed 000 §10): a CA kept in the Store (shared by every Hub on it), a server
certificate issued from it at each start, and the CA's hash that clients pin with ``--ca-hash``.

The CA (an EC P-256 key, ten years) is made on the first ``agen hub serve --tls`` and stored in
``hub_keys``, its key sealed under the KEK when one is set (agen.hub.sealing). The server certificate
names localhost, 127.0.0.1, ::1, the listen host and every ``--tls-host``. A client that pins
``sha256:<hex of the CA certificate's DER>`` fetches ``/ca.pem`` once, checks the hash, and from then
on verifies the Hub's certificate against that CA only (agen.client).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agen._cahash import ca_hash_of
from agen.hub.sealing import kek_from_env, seal, unseal
from agen.store import Store, Tx

if TYPE_CHECKING:
    from cryptography import x509

log = logging.getLogger("agen.hub.tls")
CA_CERT, CA_KEY = "ca_cert", "ca_key"


@dataclass(frozen=True)
class HubTls:
    ca_pem: str
    ca_hash: str
    cert_file: Path
    key_file: Path


def _new_ca(now: dt.datetime) -> tuple[str, str]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
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
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem


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
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName([_san(h) for h in names]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem


async def prepare(store: Store, folder: Path, hosts: list[str]) -> HubTls:
    """CA from the store, a fresh server certificate in ``folder`` (key 0600) for uvicorn."""
    from agen._home import write_private

    if kek_from_env() is None:
        log.warning(
            "agen hub: TLS without AGEN_HUB_KEK: the CA key is stored unsealed in the store; set "
            "AGEN_HUB_KEK (the same on every Hub) to seal it"
        )
    ca_cert, ca_key = await ensure_ca(store)
    cert, key = issue_server_cert(ca_cert, ca_key, ["localhost", "127.0.0.1", "::1", *hosts])
    cert_file, key_file = folder / "server.pem", folder / "server.key"
    write_private(key_file, key)
    write_private(cert_file, cert + ca_cert)
    return HubTls(
        ca_pem=ca_cert, ca_hash=ca_hash_of(ca_cert), cert_file=cert_file, key_file=key_file
    )
