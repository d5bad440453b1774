"""PEM text of the keys and certificates agen makes: the Hub's CA and server certificate, a Nest's key
and CSR, the Hub's call-token signing keys. Private keys are unencrypted PKCS#8: each one lives in a
0600 file or sealed in the store, never in a file a passphrase would have to guard.

``cryptography`` loads inside each function (a command that makes no key never pays for it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
    from cryptography.hazmat.primitives.serialization import Encoding


class _Public(Protocol):
    def public_bytes(self, encoding: Encoding) -> bytes: ...


def private_key_pem(key: PrivateKeyTypes) -> str:
    """A private key as unencrypted PKCS#8 PEM."""
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def to_pem(obj: _Public) -> str:
    """A certificate or a certificate signing request as PEM."""
    from cryptography.hazmat.primitives import serialization

    return obj.public_bytes(serialization.Encoding.PEM).decode()
