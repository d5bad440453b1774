"""Webhook caller verification: a per-trigger bearer secret, or an HMAC over the raw body.

Every comparison is constant-time (hmac.compare_digest); only hashes of bearer secrets are stored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable, Mapping

from agen.bundle.triggers import HmacAuth

MAX_BODY_BYTES = 1024 * 1024
DEFAULT_HMAC_HEADER = "X-Signature"


def bearer_token(headers: Mapping[str, str]) -> str | None:
    value = headers.get("authorization") or headers.get("Authorization") or ""
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def check_bearer(presented: str | None, stored_hashes: Iterable[str]) -> bool:
    """True when the presented secret hashes to one of the trigger's live secret hashes."""
    if not presented:
        return False
    digest = hashlib.sha256(presented.encode()).hexdigest()
    ok = False
    for h in stored_hashes:
        ok |= hmac.compare_digest(digest, h)
    return ok


def sign(body: bytes, secret: str, *, algorithm: str = "sha256", encoding: str = "hex") -> str:
    """The signature a sender computes (also used to sign notification deliveries)."""
    mac = hmac.new(secret.encode(), body, hashlib.sha1 if algorithm == "sha1" else hashlib.sha256).digest()
    return base64.b64encode(mac).decode() if encoding == "base64" else mac.hex()


def check_hmac(auth: HmacAuth, headers: Mapping[str, str], body: bytes, secret: str) -> str | None:
    """None when the signature header matches; otherwise the reason the call is rejected."""
    header = auth.header or DEFAULT_HMAC_HEADER
    lower = {k.lower(): v for k, v in headers.items()}
    presented = lower.get(header.lower())
    if presented is None:
        return f"missing signature header {header}"
    prefix = auth.prefix or ""
    if prefix and not presented.startswith(prefix):
        return f"signature header {header} does not start with {prefix!r}"
    presented = presented[len(prefix):].strip()
    expected = sign(body, secret, algorithm=auth.algorithm or "sha256", encoding=auth.encoding or "hex")
    if auth.encoding != "base64":
        presented = presented.lower()
    if not hmac.compare_digest(presented.encode(), expected.encode()):
        return "signature does not match the body"
    return None
