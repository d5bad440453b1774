"""A short fingerprint of an API key value, so a provider hold can belong to the key it failed with.

A changed key is a new account: the hold recorded against the old key's fingerprint no longer
applies. Only the fingerprint is ever stored or shown, never the key (sha256, 16 hex digits:
enough to tell keys apart, useless for recovering one).
"""

from __future__ import annotations

import hashlib
import os


def key_fingerprint(value: str | None) -> str | None:
    """``sha256:<16 hex>`` of the key value; None without a key."""
    if not value:
        return None
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]


def env_key_fingerprint(var: str | None) -> str | None:
    """The fingerprint of the key agen's environment holds in ``var`` now (None if unset)."""
    return key_fingerprint(os.environ.get(var)) if var else None
