"""Sealing the Hub's own secrets at rest (seed 000 §10): AES-256-GCM under a key-encryption key (KEK)
that never lives in the database.

The KEK comes from ``AGEN_HUB_KEK`` (at least 32 characters of randomness, the same on every Hub, never
given to Nests) or from the file ``AGEN_HUB_KEK_FILE`` names; the AES key is derived from it with
HKDF-SHA256 (agen.crypto.sealing, the one scheme), so any long random string works. A sealed value is ``sealed:v1:<base64 nonce+ciphertext>``;
the value's name is the associated data, so a sealed value copied under another name does not open.
Without a KEK values stay plaintext (local ``agen up``), and a TLS Hub says so at start.
``agen hub rotate-kek`` re-seals every sealed value under ``AGEN_HUB_KEK_NEW`` (or the file
``AGEN_HUB_KEK_NEW_FILE`` names) in one transaction (agen.hub.platform_secrets.rotate_kek).
"""

from __future__ import annotations

import os
from pathlib import Path

from agen.crypto.sealing import WrongKey, open_with, seal_with
from agen.crypto.sealing import is_sealed as is_sealed  # the Hub's modules ask it here
from agen.errors import InvalidError

ENV_KEK = "AGEN_HUB_KEK"
ENV_KEK_FILE = "AGEN_HUB_KEK_FILE"
ENV_KEK_NEW = "AGEN_HUB_KEK_NEW"
ENV_KEK_NEW_FILE = "AGEN_HUB_KEK_NEW_FILE"
MIN_KEK_CHARS = 32


def kek_from_env(env: str = ENV_KEK, file_env: str = ENV_KEK_FILE) -> bytes | None:
    """The KEK the environment names (``env``, else the file ``file_env`` names), or None; a KEK too
    short to be random is refused."""
    value = os.environ.get(env, "")
    where = env
    path = os.environ.get(file_env, "")
    if not value and path:
        where = f"{file_env} ({path})"
        try:
            value = Path(path).read_text().strip()
        except OSError as e:
            raise InvalidError(
                f"{where}: cannot read the KEK file ({e.strerror})", field=file_env
            ) from None
    if not value:
        return None
    if len(value) < MIN_KEK_CHARS:
        raise InvalidError(
            f"{where} is {len(value)} characters; use at least {MIN_KEK_CHARS} random ones "
            "(e.g. `openssl rand -base64 48`)",
            field=env,
        )
    return value.encode()


def seal(name: str, value: str, kek: bytes | None) -> str:
    """``value`` sealed under ``kek`` (plaintext when there is no KEK)."""
    return value if kek is None else seal_with(kek, name, value)


def unseal(name: str, stored: str, kek: bytes | None) -> str:
    """The plaintext of a stored value; a sealed one needs the KEK it was sealed with."""
    if not is_sealed(stored):
        return stored
    if kek is None:
        raise InvalidError(
            f"{name} is sealed with a key-encryption key; start the Hub with {ENV_KEK} (or "
            f"{ENV_KEK_FILE}) set to the same value as the Hub that sealed it",
            field=ENV_KEK,
        )
    try:
        return open_with(kek, name, stored)
    except WrongKey:
        raise InvalidError(
            f"{name} does not open with this {ENV_KEK}: it was sealed with another key",
            field=ENV_KEK,
        ) from None
