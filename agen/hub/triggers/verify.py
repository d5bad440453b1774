"""Webhook caller verification: a per-trigger bearer secret, or an HMAC over the raw body
(``scheme: body``) or over ``<t>.<body>`` with a timestamp checked against a tolerance
(``scheme: timestamped``, the Stripe layout: ``t=<unix seconds>,v1=<hex>``).

Every comparison is constant-time (hmac.compare_digest); only hashes of bearer secrets are stored.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agen.bundle.triggers import HmacAuth
from agen.hub.events.notify import sign
from agen.util.duration import parse_duration_ms

MAX_BODY_BYTES = 1024 * 1024
DEFAULT_HMAC_HEADER = "X-Signature"
TIMESTAMPED_HEADER = "X-Agen-Signature"
DEFAULT_TOLERANCE_MS = 5 * 60_000


def check_bearer(presented: str | None, stored_hashes: Iterable[str]) -> bool:
    """True when the presented secret hashes to one of the trigger's live secret hashes."""
    if not presented:
        return False
    digest = hashlib.sha256(presented.encode()).hexdigest()
    ok = False
    for h in stored_hashes:
        ok |= hmac.compare_digest(digest, h)
    return ok


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
    presented = presented[len(prefix) :].strip()
    expected = sign(
        body, secret, algorithm=auth.algorithm or "sha256", encoding=auth.encoding or "hex"
    )
    if auth.encoding != "base64":
        presented = presented.lower()
    if not hmac.compare_digest(presented.encode(), expected.encode()):
        return "signature does not match the body"
    return None


def sign_timestamped(body: bytes, secret: str, t: int, *, algorithm: str = "sha256") -> str:
    """The X-Agen-Signature value a sender puts on a delivery made at unix second ``t``."""
    return f"t={t},v1={sign(str(t).encode() + b'.' + body, secret, algorithm=algorithm)}"


@dataclass(frozen=True)
class Verdict:
    """A timestamped signature check: ``problem`` is None when it holds; ``signature`` is the v1 that matched."""

    problem: str | None = None
    stale: bool = False
    signature: str | None = None


def check_timestamped(
    auth: HmacAuth, headers: Mapping[str, str], body: bytes, secret: str, now_ms: int
) -> Verdict:
    """Check ``t=<unix>,v1=<hex>[,v1=...]`` (several v1 while a secret is rotated) within the tolerance."""
    header = auth.header or TIMESTAMPED_HEADER
    lower = {k.lower(): v for k, v in headers.items()}
    presented = lower.get(header.lower())
    if presented is None:
        return Verdict(f"missing signature header {header}")
    stamps: list[str] = []
    sigs: list[str] = []
    for part in presented.split(","):
        key, _, value = part.strip().partition("=")
        (stamps if key == "t" else sigs if key == "v1" else []).append(value.strip())
    if len(stamps) != 1 or not stamps[0].isdigit() or not sigs:
        return Verdict(f'signature header {header} must be "t=<unix seconds>,v1=<hex>"')
    t = int(stamps[0])
    tolerance = parse_duration_ms(auth.tolerance) if auth.tolerance else DEFAULT_TOLERANCE_MS
    if abs(now_ms - t * 1000) > tolerance:
        return Verdict(
            f"signature timestamp {t} is {abs(now_ms // 1000 - t)}s from the Hub's clock, "
            f"outside the {tolerance // 1000}s tolerance",
            stale=True,
        )
    expected = sign(stamps[0].encode() + b"." + body, secret, algorithm=auth.algorithm or "sha256")
    for sig in sigs:
        if hmac.compare_digest(sig.lower().encode(), expected.encode()):
            return Verdict(signature=expected)
    return Verdict("signature does not match the timestamp and body")
