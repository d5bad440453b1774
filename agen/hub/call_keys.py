"""The Hub's call-token keys (seed 000 §10): Ed25519 key pairs in ``hub_keys``, one added per
rotation (``agen hub rotate-token-key``), shared by every Hub on the Store.

Each key is two rows, like the CA (agen.hub.tls): its private key, sealed under the KEK when one is
set (agen.hub.sealing), and its public key in the clear. The first key is ``call_token_key`` (made
on first use; two Hubs starting together agree on it, the first insert wins); rotation *n* adds
``call_token_key/<n>``. The generation number orders them, and a key's state follows from that
order and the newest key's age, so no Hub has to change a row when a grace period ends and every
Hub reading the same rows agrees:

* the newest key is **next** for ``GRACE_MS`` after it was added (published, so every verifier
  holds it before a token signed with it appears, but not signing), then **current** (signing);
* the key before it is **current** while the newest is in its grace, then **previous** (no longer
  signing; its live tokens still verify);
* every older key is **retired**: kept, never published, never accepted for a call. A rotation
  retires the previous key, which it may only do once that key's last token has expired: the
  newest key must be at least an agent token's lifetime plus twice the grace old (``--force``
  overrides, and that previous key's live tokens are then refused at once).

A Hub reads the keys at most once a minute (``REREAD_MS``), and again (at most every 10 s) when a
token names a key it does not hold; ``GetTokenKeys`` publishes what the Store holds now. Tokens are
minted and verified in agen.calltokens; they are handed out by ResolveAgent (an operator's, 10 min)
and ResolveChildAgent (an instance's, 1 h), each for one callee.
"""

from __future__ import annotations

import base64
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from agen.calltokens import (
    CallIdentity,
    UnknownKeyError,
    key_id,
    mint_call_token,
    verify_call_token,
)
from agen.crypto.pem import private_key_pem
from agen.domain import columns
from agen.errors import ConflictError
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
GRACE_MS = 5 * 60_000  # a new key is published this long before it signs
REREAD_MS = 60_000  # a Hub reads the keys again at least this often
UNKNOWN_REREAD_MS = 10_000  # a token naming an unknown key reads them again at most this often
ROTATE_AFTER_MS = AGENT_TOKEN_TTL_MS + 2 * GRACE_MS
"""The newest key's age before another rotation may retire the key before it: by then that key has
signed nothing for longer than any token lives."""


class KeyState(StrEnum):
    NEXT = "next"
    CURRENT = "current"
    PREVIOUS = "previous"
    RETIRED = "retired"


LIVE_STATES = frozenset({KeyState.NEXT, KeyState.CURRENT, KeyState.PREVIOUS})
"""Published by GetTokenKeys and accepted for calls."""


def private_name(generation: int) -> str:
    return CALL_KEY if generation == 0 else f"{CALL_KEY}/{generation}"


def public_name(generation: int) -> str:
    return CALL_KEY_PUBLIC if generation == 0 else f"{CALL_KEY_PUBLIC}/{generation}"


def is_private_key_row(name: str) -> bool:
    """Whether a ``hub_keys`` row holds a call-token private key (sealed; re-sealed by rotate-kek)."""
    return _generation(name, CALL_KEY) is not None


def _generation(name: str, base: str) -> int | None:
    if name == base:
        return 0
    head, slash, tail = name.partition("/")
    return int(tail) if head == base and slash and tail.isdigit() and int(tail) > 0 else None


@dataclass(frozen=True)
class StoredKey:
    """One call-token key as the Store holds it: its public half (the private one is unsealed only
    for the key that signs)."""

    generation: int
    public: Ed25519PublicKey
    created_ms: int
    id: str  # key_id(public): what tokens name

    @property
    def public_raw_b64(self) -> str:
        from cryptography.hazmat.primitives import serialization

        raw = self.public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return base64.b64encode(raw).decode()


@dataclass(frozen=True)
class KeySet:
    """Every call-token key, newest first, as read at ``read_ms``."""

    keys: tuple[StoredKey, ...]
    read_ms: int
    unsealed: dict[str, Ed25519PrivateKey] = field(default_factory=dict, compare=False)
    """Private keys by id, unsealed when first used for signing (kept across re-reads)."""

    def state(self, index: int, now_ms: int) -> KeyState:
        in_grace = len(self.keys) > 1 and now_ms - self.keys[0].created_ms < GRACE_MS
        if index == 0:
            return KeyState.NEXT if in_grace else KeyState.CURRENT
        if index == 1:
            return KeyState.CURRENT if in_grace else KeyState.PREVIOUS
        return KeyState.RETIRED

    def states(self, now_ms: int) -> list[tuple[StoredKey, KeyState]]:
        return [(k, self.state(i, now_ms)) for i, k in enumerate(self.keys)]

    def live(self, now_ms: int) -> list[StoredKey]:
        """What GetTokenKeys publishes and calls are accepted with: next, current, previous."""
        return [k for k, s in self.states(now_ms) if s in LIVE_STATES]

    def live_by_id(self, now_ms: int) -> dict[str, Ed25519PublicKey]:
        return {k.id: k.public for k in self.live(now_ms)}

    def signer(self, now_ms: int) -> StoredKey:
        return next(k for k, s in self.states(now_ms) if s is KeyState.CURRENT)


@dataclass(frozen=True)
class CallKey:
    """The key pair this Hub signs with now."""

    private: Ed25519PrivateKey
    public: Ed25519PublicKey

    @property
    def id(self) -> str:
        return key_id(self.public)


_sets: weakref.WeakKeyDictionary[Store, KeySet] = weakref.WeakKeyDictionary()


def forget(store: Store) -> None:
    """Read the keys again on next use (this Hub just rotated, or a test plays another Hub)."""
    _sets.pop(store, None)


class _KeyRow(NamedTuple):
    """A row of ``hub_keys``: a public key's PEM (or a private key's, sealed)."""

    name: str
    value: str
    created_ms: int


def _stored(rows: list[_KeyRow]) -> tuple[StoredKey, ...]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    keys = []
    for row in rows:
        generation = _generation(row.name, CALL_KEY_PUBLIC)
        if generation is None:
            continue
        public = serialization.load_pem_public_key(row.value.encode())
        assert isinstance(public, Ed25519PublicKey)
        keys.append(StoredKey(generation, public, int(row.created_ms), key_id(public)))
    return tuple(sorted(keys, key=lambda k: -k.generation))


_PUBLIC_ROWS = f"SELECT {columns(_KeyRow)} FROM hub_keys WHERE name = ? OR name LIKE ?"
_PUBLIC_NAMES = (CALL_KEY_PUBLIC, CALL_KEY_PUBLIC + "/%")  # names are then parsed strictly


async def key_set(store: Store, now_ms: int, *, max_age_ms: int = REREAD_MS) -> KeySet:
    """The Store's call-token keys, read again when the copy held is ``max_age_ms`` old; the first
    key is made (and sealed) when there is none."""
    held = _sets.get(store)
    if held is not None and 0 <= now_ms - held.read_ms < max_age_ms:
        return held
    keys = _stored(await store.rows(_KeyRow, _PUBLIC_ROWS, _PUBLIC_NAMES))
    if not keys:  # the first Hub on this store: make one (a racing Hub's insert wins)
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        keys = await store.write(_first_key(Ed25519PrivateKey.generate(), kek_from_env(), now_ms))
    fresh = KeySet(keys, now_ms, held.unsealed if held is not None else {})
    _sets[store] = fresh
    return fresh


def _pems(fresh: Ed25519PrivateKey) -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization

    private = private_key_pem(fresh)
    public = (
        fresh.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


def _insert(tx: Tx, generation: int, fresh: Ed25519PrivateKey, kek: bytes | None, now: int) -> bool:
    """Add key ``generation``; False when that generation exists already (another Hub was first)."""
    private, public = _pems(fresh)
    sql = "INSERT INTO hub_keys (name, value, created_ms) VALUES (?,?,?) ON CONFLICT (name) DO NOTHING"
    name = private_name(generation)
    if not tx.execute(sql, (name, seal(name, private, kek), now)):
        return False
    tx.execute(sql, (public_name(generation), public, now))
    return True


def _first_key(
    fresh: Ed25519PrivateKey, kek: bytes | None, now: int
) -> Callable[[Tx], tuple[StoredKey, ...]]:
    def fn(tx: Tx) -> tuple[StoredKey, ...]:
        _insert(tx, 0, fresh, kek, now)
        return _stored(tx.rows(_KeyRow, _PUBLIC_ROWS, _PUBLIC_NAMES))

    return fn


async def signing_key(store: Store, now_ms: int) -> CallKey:
    """The key pair tokens are signed with now (the current key), its private half unsealed once."""
    keys = await key_set(store, now_ms)
    signer = keys.signer(now_ms)
    private = keys.unsealed.get(signer.id)
    if private is None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        name = private_name(signer.generation)
        stored = await store.scalar("SELECT value FROM hub_keys WHERE name = ?", (name,))
        loaded = serialization.load_pem_private_key(
            unseal(name, str(stored), kek_from_env()).encode(), password=None
        )
        assert isinstance(loaded, Ed25519PrivateKey)
        private = keys.unsealed[signer.id] = loaded
    return CallKey(private, signer.public)


async def published_keys(store: Store, now_ms: int) -> list[StoredKey]:
    """What GetTokenKeys answers: the live keys as the Store holds them now (a key added by another
    Hub is published at once)."""
    return (await key_set(store, now_ms, max_age_ms=0)).live(now_ms)


async def verify_at_hub(store: Store, token: str, now_ms: int) -> CallIdentity:
    """A call token checked with this Hub's live keys; a key not held reads them again first (at
    most every ``UNKNOWN_REREAD_MS``), so a key another Hub just added verifies here too."""
    keys = await key_set(store, now_ms)
    try:
        return verify_call_token(token, keys.live_by_id(now_ms), now_ms)
    except UnknownKeyError:
        again = await key_set(store, now_ms, max_age_ms=UNKNOWN_REREAD_MS)
        if again is keys:
            raise
        return verify_call_token(token, again.live_by_id(now_ms), now_ms)


@dataclass(frozen=True)
class Rotation:
    added: StoredKey
    retired: StoredKey | None
    signs_from_ms: int
    keys: KeySet


def _span(ms: int) -> str:
    """A duration as a person reads it: 40s, 12m, 1h10m (to the nearest second or minute)."""
    if ms < 60_000:
        return f"{max(0, round(ms / 1000))}s"
    minutes = round(ms / 60_000)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def rotate(
    fresh: Ed25519PrivateKey, kek: bytes | None, now_ms: int, *, force: bool
) -> Callable[[Tx], Rotation]:
    """The transaction of ``agen hub rotate-token-key``: add key ``fresh`` as the next one, which
    retires the previous key; refused while the newest key is younger than ``ROTATE_AFTER_MS``
    unless ``force``."""

    def fn(tx: Tx) -> Rotation:
        keys = _stored(tx.rows(_KeyRow, _PUBLIC_ROWS, _PUBLIC_NAMES))
        if not keys:  # nothing signed yet: the first key, signing at once
            _insert(tx, 0, fresh, kek, now_ms)
            made = KeySet(_stored(tx.rows(_KeyRow, _PUBLIC_ROWS, _PUBLIC_NAMES)), now_ms)
            return Rotation(made.keys[0], None, now_ms, made)
        newest = keys[0]
        age = now_ms - newest.created_ms
        retiring = keys[1] if len(keys) > 1 else None  # previous (or, forced in a grace, current)
        if age < ROTATE_AFTER_MS and not force:
            from datetime import UTC, datetime

            allowed = newest.created_ms + ROTATE_AFTER_MS
            at = datetime.fromtimestamp(allowed / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
            refused = f" (tokens key {retiring.id} signed are then refused)" if retiring else ""
            raise ConflictError(
                f"the newest call-token key ({newest.id}) was added {_span(age)} ago; a rotation "
                "retires the key before it, so it waits until no token of that key can still be "
                f"live: until the newest is {_span(ROTATE_AFTER_MS)} old (an agent token's 1h "
                f"lifetime plus twice the {_span(GRACE_MS)} grace). Allowed from {at} (in "
                f"{_span(allowed - now_ms)}); --force rotates now{refused}",
                allowed_from_ms=allowed,
            )
        generation = newest.generation + 1
        if not _insert(tx, generation, fresh, kek, now_ms):
            raise ConflictError(
                f"another rotation added call-token key {generation} just now; nothing changed"
            )
        after = KeySet(_stored(tx.rows(_KeyRow, _PUBLIC_ROWS, _PUBLIC_NAMES)), now_ms)
        return Rotation(after.keys[0], retiring, now_ms + GRACE_MS, after)

    return fn


async def rotate_token_key(store: Store, now_ms: int, *, force: bool = False) -> Rotation:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    done = await store.write(
        rotate(Ed25519PrivateKey.generate(), kek_from_env(), now_ms, force=force)
    )
    forget(store)  # this Hub publishes it at once; others within REREAD_MS
    return done


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
