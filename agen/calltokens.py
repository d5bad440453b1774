"""Call tokens (seed 000 §10): a short-lived credential, signed by the Hub, that an A2A caller
presents as its bearer at a Gateway.

A token names who is calling (``user:<token id>`` for an operator who resolved the agent, or
``agent:<ns>/<deployment>`` for an instance), the one deployment it may call (``<ns>/<name>``),
the caller's trust (the most the tasks it starts get), for an agent its instance and its depth in
a delegation tree, the id of the key that signed it, and when it expires. The Hub signs it with its Ed25519 key (agen.hub.call_keys); a Gateway checks
it offline with the Hub's public keys through :func:`verify_call_token`, the one place that
decides whether a token is good. The format is ``agen-ct1.<payload>.<signature>``, both parts
unpadded base64url and the payload canonical JSON, so nothing but this module parses it.

Leaf module: it imports only ``cryptography`` and agen's errors, so the Hub (which mints) and a
Gateway (which verifies) can both use it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agen.errors import UnauthenticatedError
from agen.util.canonical import canonical_json

if TYPE_CHECKING:  # imported when used: a one-shot command that mints nothing does not load it
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

PREFIX = "agen-ct1"
MAX_TOKEN_CHARS = 4096  # a token is a few hundred characters; refuse anything absurd unparsed


@dataclass(frozen=True)
class CallIdentity:
    """What a valid call token says: who calls (``caller``), which deployment it may call
    (``callee``, ``<ns>/<name>``), the signing key's id, and for an agent its instance and depth."""

    caller: str  # user:<token id> | agent:<ns>/<deployment>
    callee: str  # <ns>/<deployment>
    issued_ms: int
    expires_ms: int
    key_id: str = ""
    instance: str | None = None
    depth: int = 0
    trust: str = "untrusted"  # the caller's trust: tasks it starts get no more (agen.hub.auth)

    @property
    def is_agent(self) -> bool:
        return self.caller.startswith("agent:")

    @property
    def caller_deployment(self) -> tuple[str, str] | None:
        """An agent caller's (namespace, deployment); None for a user."""
        if not self.is_agent:
            return None
        ns, _, dep = self.caller.removeprefix("agent:").partition("/")
        return ns, dep

    def allows(self, namespace: str, deployment: str) -> bool:
        return self.callee == f"{namespace}/{deployment}"


def is_call_token(token: str) -> bool:
    """Whether a bearer is a call token (as opposed to an API token): its prefix says so."""
    return token.startswith(PREFIX + ".")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def key_id(public_key: Ed25519PublicKey) -> str:
    """A key's id: the first 8 bytes of the SHA-256 of its raw public key, base64url. Tokens carry
    it, so a verifier holding several keys (a rotation) picks the right one or knows to refetch."""
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return _b64(hashlib.sha256(raw).digest()[:8])


def mint_call_token(key: Ed25519PrivateKey, identity: CallIdentity) -> str:
    """Sign ``identity`` (its issue and expiry times included) into a token string; the key id is
    the signing key's own, whatever ``identity.key_id`` says."""
    payload: dict[str, Any] = {
        "v": 2,
        "kid": key_id(key.public_key()),
        "sub": identity.caller,
        "aud": identity.callee,
        "iat": identity.issued_ms,
        "exp": identity.expires_ms,
        "trust": identity.trust,
    }
    if identity.is_agent:
        payload["inst"] = identity.instance
        payload["depth"] = identity.depth
    body = _b64(canonical_json(payload).encode())
    signature = key.sign(f"{PREFIX}.{body}".encode())
    return f"{PREFIX}.{body}.{_b64(signature)}"


class UnknownKeyError(UnauthenticatedError):
    """The token names a key the verifier does not hold: fetch the Hub's keys again, then retry."""


def _refuse(why: str) -> UnauthenticatedError:
    return UnauthenticatedError(f"call token refused: {why}")


def _parts(token: str) -> tuple[str, str, dict[str, Any]]:
    if len(token) > MAX_TOKEN_CHARS:
        raise _refuse(f"longer than {MAX_TOKEN_CHARS} characters")
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise _refuse(f"not an agen call token (expected {PREFIX}.<payload>.<signature>)")
    try:
        payload = json.loads(_unb64(parts[1]))
    except ValueError:
        raise _refuse("its payload is malformed") from None
    if not isinstance(payload, dict):
        raise _refuse("its payload is malformed")
    return parts[1], parts[2], payload


def token_key_id(token: str) -> str:
    """The id of the key a token says signed it (unverified: for choosing the key only)."""
    return str(_parts(token)[2].get("kid") or "")


def verify_call_token(
    token: str, keys: Mapping[str, Ed25519PublicKey], now_ms: int
) -> CallIdentity:
    """The identity ``token`` carries, once its signature verifies under the key it names (one of
    ``keys``, by id) and it has not expired at ``now_ms``. Otherwise UnauthenticatedError saying
    which check failed; UnknownKeyError when the named key is not among ``keys``."""
    from cryptography.exceptions import InvalidSignature

    body, sig, payload = _parts(token)
    kid = str(payload.get("kid") or "")
    public_key = keys.get(kid)
    if public_key is None:
        raise UnknownKeyError(
            f"call token refused: it was signed with key {kid or '(none)'}, which this Hub does "
            "not publish (signed by another Hub, or a retired key); get a fresh token"
        )
    try:
        public_key.verify(_unb64(sig), f"{PREFIX}.{body}".encode())
    except (InvalidSignature, ValueError):
        raise _refuse(
            "its signature does not verify with this Hub's key (tampered, or signed by another Hub)"
        ) from None
    try:
        identity = CallIdentity(
            caller=str(payload["sub"]),
            callee=str(payload["aud"]),
            issued_ms=int(payload["iat"]),
            expires_ms=int(payload["exp"]),
            key_id=kid,
            instance=str(payload["inst"]) if payload.get("inst") is not None else None,
            depth=int(payload.get("depth") or 0),
            trust=str(payload.get("trust") or "untrusted"),
        )
    except (ValueError, KeyError, TypeError):
        raise _refuse("its payload is malformed") from None
    if now_ms >= identity.expires_ms:
        raise _refuse(
            f"it expired {(now_ms - identity.expires_ms) // 1000}s ago (caller "
            f"{identity.caller}); get a fresh one (`agen resolve`, or the caller's Nest)"
        )
    return identity


def public_key_from_raw(raw: bytes) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    return Ed25519PublicKey.from_public_bytes(raw)


def keys_by_id(raw_b64_keys: list[str]) -> dict[str, Ed25519PublicKey]:
    """The Hub's published keys (GetTokenKeys: raw public keys, base64) by their key id."""
    out: dict[str, Ed25519PublicKey] = {}
    for raw in raw_b64_keys:
        key = public_key_from_raw(base64.b64decode(raw))
        out[key_id(key)] = key
    return out
