"""Call-token key rotation (seed 000 §10, ``agen hub rotate-token-key``): a new key is published at
once and signs after the 5-minute grace; the key it replaces keeps verifying live tokens until the
next rotation retires it; a rotation is refused while the newest key is younger than an agent
token's lifetime plus twice the grace (``--force`` overrides); every Hub on the Store reads the keys
again within a minute, and at once for a key a token names that it does not hold. The clock is the
Hub's (injected): no test waits for a grace to pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from agen.api import registry as r
from agen.calltokens import CallIdentity, UnknownKeyError, mint_call_token, token_key_id
from agen.client import Client
from agen.errors import ConflictError, DeniedError
from agen.hub.auth import LOCAL_NEST, Principal
from agen.hub.call_keys import GRACE_MS, ROTATE_AFTER_MS, signing_key
from agen.hub.service import Hub
from agen.store import SQLiteStore, Store
from agen.wire.common import Empty
from agen.wire.tokens import RotateTokenKeyRequest, RotateTokenKeyResponse

T0 = 1_800_000_000_000
MIN = 60_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


async def _another_process(store: Store) -> Store:
    """A second connection to the same store: what another Hub process holds."""
    if isinstance(store, SQLiteStore):
        return await SQLiteStore.open(store.path)
    from agen.store.postgres import PostgresStore

    return await PostgresStore.open(store.connect_url)


async def _rotate(hub: Hub, *, force: bool = False) -> RotateTokenKeyResponse:
    return await Client.in_process(hub).call(r.RotateTokenKey, RotateTokenKeyRequest(force=force))


async def _published(hub: Hub) -> list[str]:
    return [
        k.id for k in (await Client.in_process(hub, LOCAL_NEST).call(r.GetTokenKeys, Empty())).keys
    ]


async def _token(hub: Hub, *, ttl_ms: int = MIN) -> str:
    """A token this Hub signs now (for an agent: ResolveChildAgent's kind)."""
    now = hub.clock()
    key = await signing_key(hub.store, now)
    who = CallIdentity(
        caller="agent:default/a", callee="default/b", issued_ms=now, expires_ms=now + ttl_ms
    )
    return mint_call_token(key.private, who)


async def test_a_new_key_is_published_at_once_and_signs_only_after_the_grace(
    store: Store,
) -> None:
    clock = Clock()
    hub = Hub(store, clock=clock)
    old = token_key_id(await _token(hub))  # the first key, made on first use
    clock.now += ROTATE_AFTER_MS
    done = await _rotate(hub)
    assert [(k.id, k.state) for k in done.keys] == [(done.added, "next"), (old, "current")]
    assert done.signs_from_ms == clock.now + GRACE_MS and done.retired is None
    assert await _published(hub) == [done.added, old]  # verifiers hold it before it signs
    clock.now += GRACE_MS - 1
    before = await _token(hub)
    assert token_key_id(before) == old
    clock.now += 1
    after = await _token(hub, ttl_ms=2 * MIN)
    assert token_key_id(after) == done.added
    # The replaced key is previous now: its live tokens still verify, at the Hub too.
    assert (await hub.auth.authenticate(before, clock.now)).call is not None
    assert (await hub.auth.authenticate(after, clock.now)).call is not None


async def test_the_next_rotation_retires_the_previous_key_and_its_tokens_are_refused(
    store: Store,
) -> None:
    clock = Clock()
    hub = Hub(store, clock=clock)
    first = await _token(hub, ttl_ms=4 * 60 * MIN)  # longer than any real token: to see retirement
    clock.now += ROTATE_AFTER_MS
    second = (await _rotate(hub)).added
    clock.now += ROTATE_AFTER_MS
    assert (await hub.auth.authenticate(first, clock.now)).call is not None  # previous: verifies
    third = await _rotate(hub)
    assert third.retired == token_key_id(first)
    assert [k.state for k in third.keys] == ["next", "current", "retired"]  # kept, not live
    assert await _published(hub) == [third.added, second]
    with pytest.raises(UnknownKeyError, match="which this Hub does not publish"):
        await hub.auth.authenticate(first, clock.now)


async def test_a_rotation_is_refused_while_the_newest_key_is_young_saying_when_and_force_overrides(
    store: Store,
) -> None:
    clock = Clock()
    hub = Hub(store, clock=clock)
    await _token(hub)
    clock.now += ROTATE_AFTER_MS
    second = (await _rotate(hub)).added
    clock.now += 30 * MIN
    with pytest.raises(ConflictError) as refused:
        await _rotate(hub)
    message = refused.value.message
    assert f"({second}) was added 30m ago" in message
    assert "until the newest is 1h10m old" in message and "(in 40m)" in message
    assert "Allowed from 2027-01-15 10:20 UTC" in message and "--force rotates now" in message
    assert refused.value.details["allowed_from_ms"] == clock.now + 40 * MIN
    forced = await _rotate(hub, force=True)
    assert forced.retired is not None and forced.added not in (second, forced.retired)


async def test_another_hub_on_the_store_publishes_at_once_and_rereads_for_an_unknown_key(
    store: Store,
) -> None:
    """Hub B (another process: its own Store connection) read the keys just before Hub A rotated."""
    clock = Clock()
    store_a, store_b = store, await _another_process(store)
    try:
        a, b = Hub(store_a, clock=clock), Hub(store_b, clock=clock)
        old = token_key_id(await _token(a))
        clock.now += ROTATE_AFTER_MS
        assert token_key_id(await _token(b)) == old  # B reads the keys now
        new = (await _rotate(a)).added
        assert await _published(b) == [new, old]  # GetTokenKeys reads the Store: at once
        clock.now += 30_000
        # A token of the new key (from a Hub whose clock ran ahead) makes B read the keys again,
        # though its copy is younger than a minute.
        new_key = await signing_key(store_a, clock.now + GRACE_MS)
        assert new_key.id == new
        who = CallIdentity(
            caller="agent:default/a",
            callee="default/b",
            issued_ms=clock.now,
            expires_ms=clock.now + MIN,
        )
        assert (await b.auth.authenticate(mint_call_token(new_key.private, who), clock.now)).call
        clock.now += GRACE_MS
        assert token_key_id(await _token(b)) == new
    finally:
        await store_b.close()


async def test_only_an_admin_without_a_namespace_limit_rotates(store: Store) -> None:
    hub = Hub(store, clock=Clock())
    limited = Principal(
        id="t", name="t", scopes=frozenset({"admin"}), namespaces=frozenset({"ops"})
    )
    with pytest.raises(DeniedError, match="without a namespace limit"):
        await Client.in_process(hub, limited).call(r.RotateTokenKey, RotateTokenKeyRequest())
    operator = Principal(id="o", name="o", scopes=frozenset({"operator"}))
    with pytest.raises(DeniedError, match="needs the admin scope"):
        await Client.in_process(hub, operator).call(r.RotateTokenKey, RotateTokenKeyRequest())


def test_rotate_kek_reseals_every_call_token_key_so_the_hub_still_signs_under_the_new_kek(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    from agen.hub.sealing import ENV_KEK, is_sealed, unseal
    from tests.cli_helpers import run_agen

    kek_a, kek_b = "a" * 40, "b" * 40
    db = tmp_path / "agen.db"
    monkeypatch.setenv(ENV_KEK, kek_a)

    async def two_keys() -> list[str]:
        opened = await SQLiteStore.open(db)
        try:
            clock = Clock()
            hub = Hub(opened, clock=clock)
            first = token_key_id(await _token(hub))
            clock.now += ROTATE_AFTER_MS
            return [first, (await _rotate(hub)).added]
        finally:
            await opened.close()

    ids = asyncio.run(two_keys())
    monkeypatch.setenv("AGEN_HUB_KEK_NEW", kek_b)
    code, out, err = run_agen(capsys, "hub", "rotate-kek", "--store", str(db), "--json")
    assert code == 0, err
    assert '"resealed": 2' in out  # both private keys (no CA, no platform secrets here)
    monkeypatch.setenv(ENV_KEK, kek_b)

    async def sign_under_b() -> tuple[str, list[str]]:
        opened = await SQLiteStore.open(db)
        try:
            clock = Clock()
            clock.now += ROTATE_AFTER_MS + GRACE_MS  # the second key signs now
            rows = await opened.all("SELECT name, value FROM hub_keys ORDER BY name")
            private = [r for r in rows if "public" not in r["name"]]
            assert all(is_sealed(r["value"]) for r in private)
            for r in private:
                unseal(r["name"], r["value"], kek_b.encode())  # opens under the new KEK
            return token_key_id(await _token(Hub(opened, clock=clock))), [
                r["name"] for r in private
            ]
        finally:
            await opened.close()

    signer, names = asyncio.run(sign_under_b())
    assert signer == ids[1] and names == ["call_token_key", "call_token_key/1"]
