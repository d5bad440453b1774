"""The Hub's call-token key (seed 000 §10): one Ed25519 key pair per Store, shared by every Hub on it.

Made on first use and kept in ``hub_keys`` like the CA (agen.hub.tls): the private key sealed
under the KEK when one is set (agen.hub.sealing), the public key in the clear, since Gateways
need it to verify tokens offline. Two Hubs starting together agree on one key (the first insert
wins). Tokens themselves are minted and verified in agen.calltokens; they are handed out by
ResolveAgent (an operator's, 10 min) and ResolveChildAgent (an instance's, 1 h), each for one callee.
"""

from __future__ import annotations

import base64
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agen.calltokens import CallIdentity, mint_call_token
from agen.hub.sealing import kek_from_env, seal, unseal
from agen.store import Store, Tx

if TYPE_CHECKING:  # imported when first used (the first lease), not when the Hub starts
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

CALL_KEY, CALL_KEY_PUBLIC = "call_token_key", "call_token_key_public"
AGENT_TOKEN_TTL_MS = 60 * 60_000  # seed 000 §10: an agent's token lives 1 h
USER_TOKEN_TTL_MS = 10 * 60_000  # and an operator's (from ResolveAgent) 10 min


@dataclass(frozen=True)
class CallKey:
    private: Ed25519PrivateKey
    public: Ed25519PublicKey

    @property
    def public_raw_b64(self) -> str:
        from cryptography.hazmat.primitives import serialization

        raw = self.public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return base64.b64encode(raw).decode()


_cache: weakref.WeakKeyDictionary[Store, CallKey] = weakref.WeakKeyDictionary()


def _pem(key: Ed25519PrivateKey) -> str:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


async def ensure_call_key(store: Store) -> CallKey:
    """The Store's call-token key pair, made (and sealed) on first use, cached per Store."""
    cached = _cache.get(store)
    if cached is not None:
        return cached
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    kek = kek_from_env()
    stored = await store.scalar("SELECT value FROM hub_keys WHERE name = ?", (CALL_KEY,))
    if stored is None:  # the first Hub on this store: make one (a racing Hub's insert wins)
        stored = await store.write(_insert_key(Ed25519PrivateKey.generate(), kek))
    private = serialization.load_pem_private_key(
        unseal(CALL_KEY, str(stored), kek).encode(), password=None
    )
    assert isinstance(private, Ed25519PrivateKey)
    key = CallKey(private, private.public_key())
    _cache[store] = key
    return key


def _insert_key(fresh: Ed25519PrivateKey, kek: bytes | None) -> Callable[[Tx], str]:
    from cryptography.hazmat.primitives import serialization

    public_pem = (
        fresh.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )

    def fn(tx: Tx) -> str:
        for name, value in (
            (CALL_KEY, seal(CALL_KEY, _pem(fresh), kek)),
            (CALL_KEY_PUBLIC, public_pem),
        ):
            tx.execute(
                "INSERT INTO hub_keys (name, value, created_ms) VALUES (?,?,?)"
                " ON CONFLICT (name) DO NOTHING",
                (name, value, tx.now_ms),
            )
        return str(tx.scalar("SELECT value FROM hub_keys WHERE name = ?", (CALL_KEY,)))

    return fn


def agent_token(
    key: CallKey,
    *,
    namespace: str,
    deployment: str,
    instance: str | None,
    depth: int,
    callee: str,
    now_ms: int,
    trust: str = "untrusted",
) -> str:
    """A call token for an instance of ``namespace/deployment`` working at ``depth`` of a
    delegation tree, good for calling ``callee`` (``<ns>/<name>``) for 1 h."""
    return mint_call_token(
        key.private,
        CallIdentity(
            caller=f"agent:{namespace}/{deployment}",
            callee=callee,
            issued_ms=now_ms,
            expires_ms=now_ms + AGENT_TOKEN_TTL_MS,
            instance=instance,
            depth=depth,
            trust=trust,
        ),
    )


def user_token(
    key: CallKey, *, token_id: str, callee: str, now_ms: int, trust: str = "untrusted"
) -> str:
    """A call token for the holder of API token ``token_id`` (an operator who resolved
    ``callee``), good for 10 min."""
    return mint_call_token(
        key.private,
        CallIdentity(
            caller=f"user:{token_id}",
            callee=callee,
            issued_ms=now_ms,
            expires_ms=now_ms + USER_TOKEN_TTL_MS,
            trust=trust,
        ),
    )
