"""The Gateway's copy of the Hub's call-token keys (seed 000 §10): fetched again every minute, so a
retired key stops verifying and a new one is held before it signs; kept on disk (0600) by a Nest,
so a Gateway restarted while the Hub is away still checks tokens offline; while the Hub does not
answer, a token naming a key not held is "retry later" (503), not "bad token" (401)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agen.calltokens import CallIdentity, UnknownKeyError, key_id, mint_call_token
from agen.errors import UnauthenticatedError, UnavailableError
from agen.gateway.auth import KeyRing

NOW = 1_800_000_000_000
WHO = CallIdentity(
    caller="agent:ops/triage", callee="ops/fixer", issued_ms=NOW, expires_ms=NOW + 3_600_000
)


def _raw(key: Ed25519PrivateKey) -> str:
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return base64.b64encode(public).decode()


class Hub:
    """GetTokenKeys as a test controls it: what it publishes, and whether it answers."""

    def __init__(self, *keys: Ed25519PrivateKey) -> None:
        self.published = list(keys)
        self.up = True
        self.asked = 0

    async def fetch(self) -> list[str]:
        self.asked += 1
        if not self.up:
            raise UnavailableError("cannot reach the Hub at http://hub:7070")
        return [_raw(k) for k in self.published]


class Clock:
    def __init__(self) -> None:
        self.s = 0.0

    def __call__(self) -> float:
        return self.s


def _ring(hub: Hub, clock: Clock, saved: Path | None = None) -> KeyRing:
    return KeyRing(hub.fetch, clock=clock, now_ms=lambda: NOW, saved=saved)


async def test_keys_are_fetched_again_after_a_minute_so_a_retired_key_stops_verifying() -> None:
    old, new = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    hub, clock = Hub(new, old), Clock()
    ring = _ring(hub, clock)
    token = mint_call_token(old, WHO)
    assert (await ring.verify(token)).key_id == key_id(old.public_key())
    hub.published = [new]  # the next rotation retired it
    clock.s = 59.0
    assert (await ring.verify(token)).caller == WHO.caller  # the copy is under a minute old
    clock.s = 60.0
    with pytest.raises(UnknownKeyError, match="does not publish"):
        await ring.verify(token)
    assert hub.asked == 2


async def test_a_nest_keeps_the_keys_0600_and_verifies_offline_after_a_restart_while_the_hub_is_away(
    tmp_path: Path,
) -> None:
    key = Ed25519PrivateKey.generate()
    saved = tmp_path / "nests" / "n1" / "token_keys.json"
    hub, clock = Hub(key), Clock()
    token = mint_call_token(key, WHO)
    await _ring(hub, clock, saved).verify(token)
    assert saved.stat().st_mode & 0o777 == 0o600
    assert json.loads(saved.read_text()) == {"keys": [_raw(key)]}
    hub.up = False
    restarted = _ring(hub, clock, saved)
    assert (await restarted.verify(token)).caller == WHO.caller  # offline, from the file
    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(UnauthenticatedError, match="signature does not verify"):
        await restarted.verify(tampered)
    # While the Hub is away, it asks at most every 10 s, not on every call.
    assert hub.asked == 2
    clock.s = 10.0
    await restarted.verify(token)
    assert hub.asked == 3


async def test_while_the_hub_is_away_a_token_of_a_key_not_held_is_retry_later_not_refused(
    tmp_path: Path,
) -> None:
    old, new = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    hub, clock = Hub(old), Clock()
    saved = tmp_path / "token_keys.json"
    await _ring(hub, clock, saved).verify(mint_call_token(old, WHO))
    hub.up = False
    ring = _ring(hub, clock, saved)
    with pytest.raises(UnavailableError, match=r"names key .*, which this Gateway does not hold"):
        await ring.verify(mint_call_token(new, WHO))
    hub.up, hub.published = True, [new, old]  # it answers again: the new key is fetched
    clock.s = 10.0
    assert (await ring.verify(mint_call_token(new, WHO))).key_id == key_id(new.public_key())
    assert json.loads(saved.read_text()) == {"keys": [_raw(new), _raw(old)]}


async def test_without_any_key_held_an_unreachable_hub_is_retry_later(tmp_path: Path) -> None:
    hub = Hub(Ed25519PrivateKey.generate())
    hub.up = False
    (tmp_path / "token_keys.json").write_text("{broken")  # unreadable: ignored, keys fetched
    ring = _ring(hub, Clock(), tmp_path / "token_keys.json")
    with pytest.raises(UnavailableError, match="cannot reach the Hub"):
        await ring.verify(mint_call_token(Ed25519PrivateKey.generate(), WHO))
