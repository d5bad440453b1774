"""AES-256-GCM sealing of a named value under a key-encryption key (KEK), the one scheme for secrets
at rest: the Hub's (agen.hub.sealing, its KEK from AGEN_HUB_KEK) and the MCP OAuth tokens a Nest's
runs use (agen.runner.tools.mcp_oauth, a key of its own home). The AES key is derived from the KEK
with HKDF-SHA256 (``info`` keeps keys of different uses apart), a sealed value is
``sealed:v1:<base64 nonce+ciphertext>``, and the value's name is the associated data, so a sealed
value copied under another name does not open."""

from __future__ import annotations

import base64
import os

PREFIX = "sealed:v1:"
HUB_INFO = b"agen hub kek v1"


class WrongKey(Exception):
    """The value was sealed under another KEK (or another name)."""


def _aead(kek: bytes, info: bytes) -> object:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(kek)
    return AESGCM(key)


def seal_with(kek: bytes, name: str, value: str, info: bytes = HUB_INFO) -> str:
    """``value`` sealed under ``kek``, bound to ``name``."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = _aead(kek, info)
    assert isinstance(aead, AESGCM)
    nonce = os.urandom(12)
    box = aead.encrypt(nonce, value.encode(), name.encode())
    return PREFIX + base64.b64encode(nonce + box).decode()


def is_sealed(stored: str) -> bool:
    return stored.startswith(PREFIX)


def open_with(kek: bytes, name: str, stored: str, info: bytes = HUB_INFO) -> str:
    """The plaintext of a sealed value; ``WrongKey`` when ``kek`` or ``name`` is not the one it was sealed with."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = _aead(kek, info)
    assert isinstance(aead, AESGCM)
    raw = base64.b64decode(stored.removeprefix(PREFIX))
    try:
        return aead.decrypt(raw[:12], raw[12:], name.encode()).decode()
    except InvalidTag:
        raise WrongKey(name) from None
