"""Platform secrets in the store: sealed under the KEK, granted per deployment, sealed in place when a KEK
arrives, re-sealed under a new KEK by `agen hub rotate-kek` (the old one then fails clearly), and HMAC
webhook keys read from them."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import pytest

from agen.bundle.config import Config
from agen.domain import DeploymentRow
from agen.errors import InvalidError
from agen.hub import platform_secrets as ps
from agen.hub.sealing import is_sealed, unseal
from agen.hub.tls import CA_KEY, ensure_ca
from agen.hub.triggers.tick import sync_triggers
from agen.hub.triggers.webhook import receive
from agen.store import SQLiteStore, Store
from agen.store.records import read
from tests.cli_helpers import run_agen
from tests.unit.trigger_helpers import deployment

KEK_A = "a" * 16 + "kek-one-0123456789abcdef"
KEK_B = "b" * 16 + "kek-two-0123456789abcdef"
VALUE = "plat-9d2c51e0-never-plain"


async def _set(store: Store, name: str, grants: list[str] | None, kek: str | None) -> ps.SecretInfo:
    key = kek.encode() if kek else None
    return await store.write(
        lambda tx: ps.set_secret(tx, "default", name, VALUE, grants=grants, by="test", kek=key)
    )


async def test_a_secret_is_stored_sealed_under_the_kek_and_listed_without_its_value(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    try:
        info = await _set(store, "API_TOKEN", ["bot"], KEK_A)
        assert info.sealed and info.grants == ["bot"]
        stored = await store.scalar("SELECT value FROM platform_secrets WHERE name = 'API_TOKEN'")
        assert is_sealed(stored) and VALUE not in stored
        assert unseal(ps.sealing_name("default", "API_TOKEN"), stored, KEK_A.encode()) == VALUE
        listed = await store.read(lambda tx: ps.list_secrets(tx, "default"))
        assert [(s.name, s.grants) for s in listed] == [("API_TOKEN", ["bot"])]
        assert VALUE not in repr(listed)
        # setting it again without grants keeps them
        assert (await _set(store, "API_TOKEN", None, KEK_A)).grants == ["bot"]
    finally:
        await store.close()


async def test_without_a_kek_a_secret_stays_plaintext_and_says_so(tmp_path: Path) -> None:
    """The sealing rule of the Hub's own keys: no KEK (local `agen up`), no sealing; the answer says so."""
    store = await SQLiteStore.open(tmp_path / "agen.db")
    try:
        info = await _set(store, "API_TOKEN", ["bot"], None)
        assert not info.sealed
    finally:
        await store.close()


async def test_values_stored_before_a_kek_was_set_are_sealed_at_hub_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    try:
        await _set(store, "API_TOKEN", ["bot"], None)
        _, ca_key = await ensure_ca(store)  # the CA key, unsealed (no KEK yet)
        monkeypatch.setenv("AGEN_HUB_KEK", KEK_A)
        assert await ps.seal_stored(store) == 2
        stored = await store.scalar("SELECT value FROM platform_secrets")
        key = await store.scalar("SELECT value FROM hub_keys WHERE name = ?", (CA_KEY,))
        assert is_sealed(stored) and is_sealed(key)
        assert unseal(CA_KEY, key, KEK_A.encode()) == ca_key
        assert await ps.seal_stored(store) == 0  # nothing left to seal
    finally:
        await store.close()


def test_rotate_kek_reseals_everything_and_the_old_kek_then_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    db = tmp_path / "agen.db"
    monkeypatch.setenv("AGEN_HUB_KEK", KEK_A)

    async def seed() -> str:
        store = await SQLiteStore.open(db)
        try:
            await _set(store, "API_TOKEN", ["bot"], KEK_A)
            return (await ensure_ca(store))[1]
        finally:
            await store.close()

    ca_key = asyncio.run(seed())
    code, _, err = run_agen(capsys, "hub", "rotate-kek", "--store", str(db))
    assert code == 2 and "AGEN_HUB_KEK_NEW" in err  # no new key named
    monkeypatch.setenv("AGEN_HUB_KEK_NEW", KEK_B)
    code, out, err = run_agen(capsys, "hub", "rotate-kek", "--store", str(db), "--json")
    assert code == 0, err
    assert json.loads(out) == {"resealed": 2}

    async def check() -> None:
        store = await SQLiteStore.open(db)
        try:
            value = await store.read(
                lambda tx: ps.granted_value(tx, "default", "bot", "API_TOKEN", KEK_B.encode())
            )
            assert value == VALUE
            key = await store.scalar("SELECT value FROM hub_keys WHERE name = ?", (CA_KEY,))
            assert unseal(CA_KEY, key, KEK_B.encode()) == ca_key
            with pytest.raises(InvalidError, match="does not open with this AGEN_HUB_KEK"):
                await store.read(
                    lambda tx: ps.granted_value(tx, "default", "bot", "API_TOKEN", KEK_A.encode())
                )
        finally:
            await store.close()

    asyncio.run(check())
    # Rotating again with the old key as current fails as a whole: nothing is half-rotated.
    monkeypatch.setenv("AGEN_HUB_KEK_NEW", "c" * 40)
    code, _, err = run_agen(capsys, "hub", "rotate-kek", "--store", str(db))
    assert code != 0 and "does not open with this AGEN_HUB_KEK" in err


async def test_a_deployment_receives_only_declared_and_granted_secrets(tmp_path: Path) -> None:
    from tests.unit.queue_helpers import add_deployment

    store = await SQLiteStore.open(tmp_path / "agen.db")
    try:
        await _set(store, "API_TOKEN", ["bot"], KEK_A)
        await _set(store, "OTHER", ["someone-else"], KEK_A)
        await _set(store, "UNDECLARED", ["bot"], KEK_A)
        dep_id = await store.write(lambda tx: add_deployment(tx, name="bot"))
        files = {
            "x-agen/secrets.json": json.dumps(
                {
                    "secrets": {
                        "API_TOKEN": {"source": "platform"},
                        "OTHER": {"source": "platform"},
                        "ENVY": {"source": "env"},
                    }
                }
            ).encode()
        }
        from agen.hub.definitions import pack

        await store.write(
            lambda tx: tx.execute(
                "UPDATE definitions SET files = ? WHERE id = (SELECT definition_id FROM deployments"
                " WHERE id = ?)",
                (pack(files), dep_id),
            )
        )
        found = await store.one("SELECT * FROM deployments WHERE id = ?", (dep_id,))
        assert found is not None
        dep = read(DeploymentRow, found)
        values = await store.read(lambda tx: ps.values_for_deployment(tx, dep, KEK_A.encode()))
        assert values == {"API_TOKEN": VALUE}
    finally:
        await store.close()


async def test_an_hmac_webhook_is_verified_with_a_platform_secret_granted_to_its_deployment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGEN_HUB_KEK", KEK_A)
    store = await SQLiteStore.open(tmp_path / "agen.db")
    try:
        dep = await deployment(store, "triage")
        trig = {"name": "signed", "type": "webhook", "auth": {"type": "hmac", "secret": "HOOK"}}
        await store.write(
            lambda tx: sync_triggers(tx, dep, Config.model_validate({"triggers": [trig]}))
        )
        body = b'{"ref":"main"}'
        sig = hmac.new(VALUE.encode(), body, hashlib.sha256).hexdigest()

        async def call(delivery: str) -> int:
            headers = {"x-signature": sig, "idempotency-key": delivery}
            result = await store.write(
                lambda tx: receive(
                    tx, "default", "triage", "signed", headers, body, lambda _ns, _n: None
                )
            )
            return result.status

        assert await call("d0") == 401  # no such secret yet
        await _set(store, "HOOK", ["another"], KEK_A)
        assert await call("d1") == 401  # set, but not granted to this deployment
        reasons = await store.all("SELECT reason FROM trigger_events WHERE status = 'rejected'")
        assert {r["reason"] for r in reasons} == {"secret HOOK is not configured"}
        await _set(store, "HOOK", ["triage"], KEK_A)
        assert await call("d2") == 202
    finally:
        await store.close()
