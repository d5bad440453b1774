"""Call tokens (seed 000 §10): a short-lived credential, signed by the Hub, that an agent instance
presents as its bearer when it calls another agent over A2A.

A token names who is calling (its instance, deployment and namespace), how deep in a delegation
tree it is, and when it expires. The Hub signs it with its Ed25519 key (agen.hub.call_keys); a
Gateway checks it offline with the Hub's public key through :func:`verify_call_token`, the one
place that decides whether a token is good. The format is ``agen-ct1.<payload>.<signature>``,
both parts unpadded base64url and the payload canonical JSON, so nothing but this module needs to
parse it.

Leaf module: it imports only ``cryptography`` and agen's errors, so the Hub (which mints) and a
Gateway in a Nest (which verifies) can both use it.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agen.errors import UnauthenticatedError

if TYPE_CHECKING:  # imported when used: a one-shot command that mints nothing does not load it
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

PREFIX = "agen-ct1"
MAX_TOKEN_CHARS = 4096  # a token is a few hundred characters; refuse anything absurd unparsed


@dataclass(frozen=True)
class CallIdentity:
    """Who a valid call token says is calling: an agent instance of one deployment."""

    namespace: str
    deployment: str
    instance: str
    depth: int
    issued_ms: int
    expires_ms: int

    @property
    def caller(self) -> str:
        """The caller as seed 000 §10 names it: ``agent:<ns>/<deployment>``."""
        return f"agent:{self.namespace}/{self.deployment}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def mint_call_token(key: Ed25519PrivateKey, identity: CallIdentity) -> str:
    """Sign ``identity`` (its issue and expiry times included) into a token string."""
    payload = {
        "v": 1,
        "ns": identity.namespace,
        "dep": identity.deployment,
        "inst": identity.instance,
        "depth": identity.depth,
        "iat": identity.issued_ms,
        "exp": identity.expires_ms,
    }
    body = _b64(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode())
    signature = key.sign(f"{PREFIX}.{body}".encode())
    return f"{PREFIX}.{body}.{_b64(signature)}"


def _refuse(why: str) -> UnauthenticatedError:
    return UnauthenticatedError(f"call token refused: {why}")


def verify_call_token(token: str, public_key: Ed25519PublicKey, now_ms: int) -> CallIdentity:
    """The identity ``token`` carries, once its signature verifies under ``public_key`` and it has
    not expired at ``now_ms``; otherwise UnauthenticatedError saying which check failed."""
    from cryptography.exceptions import InvalidSignature

    if len(token) > MAX_TOKEN_CHARS:
        raise _refuse(f"longer than {MAX_TOKEN_CHARS} characters")
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise _refuse(f"not an agen call token (expected {PREFIX}.<payload>.<signature>)")
    try:
        signature = _unb64(parts[2])
        public_key.verify(signature, f"{PREFIX}.{parts[1]}".encode())
    except (InvalidSignature, ValueError):
        raise _refuse(
            "its signature does not verify with this Hub's key (tampered, or signed by another Hub)"
        ) from None
    try:
        payload: Any = json.loads(_unb64(parts[1]))
        identity = CallIdentity(
            namespace=str(payload["ns"]),
            deployment=str(payload["dep"]),
            instance=str(payload["inst"]),
            depth=int(payload["depth"]),
            issued_ms=int(payload["iat"]),
            expires_ms=int(payload["exp"]),
        )
    except (ValueError, KeyError, TypeError):
        raise _refuse("its payload is malformed") from None
    if now_ms >= identity.expires_ms:
        raise _refuse(
            f"it expired {(now_ms - identity.expires_ms) // 1000}s ago "
            f"(caller {identity.caller}); the caller needs a fresh one from its Nest"
        )
    return identity


def public_key_from_raw(raw: bytes) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    return Ed25519PublicKey.from_public_bytes(raw)
