"""The Hub's call-token key (seed 000 §10): one Ed25519 key pair per Store, shared by every Hub on it.

Made on first use and kept in ``hub_keys`` like the CA (agen.hub.tls): the private key sealed
under the KEK when one is set (agen.hub.sealing), the public key in the clear, since Gateways
need it to verify tokens offline. Two Hubs starting together agree on one key (the first insert
wins). Tokens themselves are minted and verified in agen.calltokens.
"""

from __future__ import annotations

import base64
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agen.calltokens import CallIdentity, mint_call_token
from agen.hub.fleet.definitions import get_definition_files
from agen.hub.sealing import kek_from_env, seal, unseal
from agen.hub.service import Hub
from agen.store import Store, Tx
from agen.wire.nests import LeasedTask

if TYPE_CHECKING:  # imported when first used (the first lease), not when the Hub starts
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

CALL_KEY, CALL_KEY_PUBLIC = "call_token_key", "call_token_key_public"
AGENT_TOKEN_TTL_MS = 60 * 60_000  # seed 000 §10: an agent's token lives 1 h


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
    key: CallKey, *, namespace: str, deployment: str, instance: str, depth: int, now_ms: int
) -> str:
    """A call token for one instance working at ``depth`` of a delegation tree (1 h)."""
    return mint_call_token(
        key.private,
        CallIdentity(
            namespace=namespace,
            deployment=deployment,
            instance=instance,
            depth=depth,
            issued_ms=now_ms,
            expires_ms=now_ms + AGENT_TOKEN_TTL_MS,
        ),
    )


async def with_call_tokens(
    hub: Hub, deployment_id: str, tasks: list[LeasedTask], instance_id: str
) -> None:
    """Give each leased task the call token its instance presents when it delegates over A2A:
    the instance, its deployment and namespace, and the task's depth (seed 000 §10).

    Only a deployment whose bundle has a delegate reached over A2A (a ``url``) gets tokens: the
    others would never present one, and signing (with the key load and the ``cryptography``
    import on the first lease) would tax every lease and every one-shot run for nothing."""
    if not tasks or not await _calls_over_a2a(hub.store, deployment_id):
        return
    key = await ensure_call_key(hub.store)
    now = hub.clock()
    for t in tasks:
        t.call_token = agent_token(
            key,
            namespace=t.namespace,
            deployment=t.deployment,
            instance=instance_id,
            depth=t.depth,
            now_ms=now,
        )


# definition id -> whether its bundle delegates over A2A (definitions are immutable: keyed by digest)
_a2a_definitions: dict[str, bool] = {}


async def _calls_over_a2a(store: Store, deployment_id: str) -> bool:
    definition_id = await store.scalar(
        "SELECT definition_id FROM deployments WHERE id = ?", (deployment_id,)
    )
    if definition_id is None:
        return False
    known = _a2a_definitions.get(str(definition_id))
    if known is None:
        known = _delegates_over_a2a(await get_definition_files(store, str(definition_id)))
        _a2a_definitions[str(definition_id)] = known
    return known


def _delegates_over_a2a(files: Mapping[str, bytes]) -> bool:
    """Whether a stored definition's x-agen/config.json names a delegate with a ``url``. Only that file
    is read (a lease must not parse the whole bundle), and a file that does not parse names none: the
    bundle was checked when it was deployed, and a lease is not the place to refuse it."""
    from pydantic import ValidationError

    from agen.bundle.checks import CONFIG
    from agen.bundle.config import Config

    raw = files.get(CONFIG)
    if raw is None:
        return False
    try:
        config = Config.model_validate_json(raw)
    except ValidationError:
        return False
    return any(d.url for d in config.delegates)
