"""Call tokens (seed 000 §10): the Hub's Ed25519 key (sealed like the CA key), tokens naming the
caller and the one callee, the one verify function: a good token verifies; tampered, expired and
wrong-key tokens are refused, saying why; an unknown key id is told apart so a Gateway refetches.
The Gateway's checks (wrong callee, key ring refetch) and the Hub's (a call token reaches only its
callee) are here too."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from agen.calltokens import (
    CallIdentity,
    UnknownKeyError,
    key_id,
    keys_by_id,
    mint_call_token,
    public_key_from_raw,
    verify_call_token,
)
from agen.client import Client
from agen.errors import UnauthenticatedError
from agen.hub import call_keys
from agen.hub.auth import LOCAL_NEST
from agen.hub.call_keys import CALL_KEY, signing_key
from agen.hub.sealing import ENV_KEK, is_sealed
from agen.hub.service import Hub
from agen.nest.client_port import ClientHubPort
from tests.runner_helpers import open_store

NOW = 1_800_000_000_000
WHO = CallIdentity(
    caller="agent:ops/triage",
    callee="ops/fixer",
    issued_ms=NOW,
    expires_ms=NOW + 3_600_000,
    instance="inst-1",
    depth=2,
    trust="trusted",
)


def _ring(*keys: Ed25519PrivateKey) -> dict[str, Ed25519PublicKey]:
    return {key_id(k.public_key()): k.public_key() for k in keys}


def test_a_minted_token_verifies_to_the_identity_it_carries() -> None:
    key = Ed25519PrivateKey.generate()
    token = mint_call_token(key, WHO)
    got = verify_call_token(token, _ring(key), NOW + 1000)
    assert got == replace(WHO, key_id=key_id(key.public_key()))
    assert got.caller_deployment == ("ops", "triage") and got.allows("ops", "fixer")
    assert not got.allows("ops", "triage") and not got.allows("dev", "fixer")


def test_a_user_token_names_the_person_and_no_instance() -> None:
    key = Ed25519PrivateKey.generate()
    who = CallIdentity(caller="user:tok1", callee="default/bot", issued_ms=NOW, expires_ms=NOW + 1)
    got = verify_call_token(mint_call_token(key, who), _ring(key), NOW)
    assert (got.caller, got.is_agent, got.instance, got.caller_deployment) == (
        "user:tok1",
        False,
        None,
        None,
    )


def _retouch(token: str, **changes: object) -> str:
    prefix, body, sig = token.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload.update(changes)
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return f"{prefix}.{base64.urlsafe_b64encode(raw).rstrip(b'=').decode()}.{sig}"


@pytest.mark.parametrize(
    ("make_bad", "why"),
    [
        (lambda t, k: _retouch(t, depth=0), "signature does not verify"),
        (lambda t, k: _retouch(t, trust="operator"), "signature does not verify"),
        (lambda t, k: _retouch(t, aud="ops/admin-bot"), "signature does not verify"),
        (
            lambda t, k: _retouch(
                mint_call_token(Ed25519PrivateKey.generate(), WHO), kid=key_id(k.public_key())
            ),
            "signature does not verify",
        ),
        (lambda t, k: t.replace("agen-ct1.", "agen-ct9."), "not an agen call token"),
        (lambda t, k: "Bearer nonsense", "not an agen call token"),
        (lambda t, k: t[:-4], "signature does not verify"),
    ],
    ids=[
        "depth-changed",
        "trust-raised",
        "callee-changed",
        "signed-by-another-key-claiming-this-ones-id",
        "wrong-prefix",
        "garbage",
        "cut-short",
    ],
)
def test_a_tampered_or_foreign_token_is_refused(make_bad: object, why: str) -> None:
    key = Ed25519PrivateKey.generate()
    bad = make_bad(mint_call_token(key, WHO), key)  # type: ignore[operator]
    with pytest.raises(UnauthenticatedError, match=why) as e:
        verify_call_token(bad, _ring(key), NOW)
    assert e.value.message.startswith("call token refused: ")
    assert not isinstance(e.value, UnknownKeyError)


def test_a_token_of_a_key_not_held_is_an_unknown_key_so_the_verifier_can_refetch() -> None:
    held, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    with pytest.raises(UnknownKeyError, match="does not publish"):
        verify_call_token(mint_call_token(other, WHO), _ring(held), NOW)


def test_an_expired_token_is_refused_naming_its_caller() -> None:
    key = Ed25519PrivateKey.generate()
    token = mint_call_token(key, WHO)
    with pytest.raises(UnauthenticatedError, match=r"expired 5s ago \(caller agent:ops/triage\)"):
        verify_call_token(token, _ring(key), WHO.expires_ms + 5_000)


async def test_the_hub_key_is_made_once_per_store_and_sealed_under_the_kek(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_KEK, "k" * 40)
    store = await open_store(tmp_path)
    first = await signing_key(store, NOW)
    call_keys.forget(store)  # another Hub process on the same store
    second = await signing_key(store, NOW)
    assert first.id == second.id
    stored = await store.scalar("SELECT value FROM hub_keys WHERE name = ?", (CALL_KEY,))
    assert is_sealed(str(stored))
    await store.close()


async def test_a_nest_fetches_the_hub_public_key_and_verifies_a_call_token_with_it(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    hub = Hub(store, clock=lambda: NOW)
    port = ClientHubPort(Client.in_process(hub, LOCAL_NEST))
    [raw] = await port.token_keys()
    key = await signing_key(store, NOW)
    token = call_keys.agent_token(
        key,
        namespace="default",
        deployment="d",
        instance="i",
        depth=1,
        callee="default/e",
        now_ms=NOW,
    )
    public = public_key_from_raw(base64.b64decode(raw))
    who = verify_call_token(token, keys_by_id([raw]), NOW + 1)
    assert (who.caller, who.callee, who.depth, who.key_id) == (
        "agent:default/d",
        "default/e",
        1,
        key_id(public),
    )
    assert who.expires_ms == NOW + call_keys.AGENT_TOKEN_TTL_MS
    await store.close()


async def test_the_gateways_key_ring_fetches_again_for_an_unknown_key_at_most_once_per_interval() -> (
    None
):
    """A rotation: the Hub publishes a second key; a token signed with it makes the Gateway fetch the
    keys again (once), and made-up key ids within the interval do not reach the Hub."""
    from agen.gateway.auth import KeyRing

    old, new = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    published = [old]
    clock = [0.0]

    async def fetch() -> list[str]:
        from cryptography.hazmat.primitives import serialization

        return [
            base64.b64encode(
                k.public_key().public_bytes(
                    serialization.Encoding.Raw, serialization.PublicFormat.Raw
                )
            ).decode()
            for k in published
        ]

    ring = KeyRing(fetch, refetch_s=10, clock=lambda: clock[0], now_ms=lambda: NOW)
    assert (await ring.verify(mint_call_token(old, WHO))).caller == WHO.caller
    assert ring.fetches == 1
    published.append(new)
    clock[0] = 11.0
    assert (await ring.verify(mint_call_token(new, WHO))).key_id == key_id(new.public_key())
    assert ring.fetches == 2
    stranger = Ed25519PrivateKey.generate()
    for _ in range(3):
        with pytest.raises(UnknownKeyError):
            await ring.verify(mint_call_token(stranger, WHO))
    assert ring.fetches == 2  # within the interval: no fetch per made-up key id


async def test_a_gateway_without_a_key_source_refuses_call_tokens_saying_so() -> None:
    from agen.gateway.auth import KeyRing

    with pytest.raises(UnauthenticatedError, match="no way to fetch the Hub's keys"):
        await KeyRing(None).verify(mint_call_token(Ed25519PrivateKey.generate(), WHO))
