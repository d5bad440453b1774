"""Call tokens (seed 000 §10): the Hub's Ed25519 key (sealed like the CA key), a token per leased
task naming its instance, deployment, namespace and depth, and the one verify function a Gateway
uses: a good token verifies; tampered, expired and wrong-key tokens are refused, saying why."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agen.bundle.digest import digest_files
from agen.calltokens import CallIdentity, mint_call_token, public_key_from_raw, verify_call_token
from agen.client import Client
from agen.errors import UnauthenticatedError
from agen.hub import call_keys
from agen.hub import queue as q
from agen.hub.auth import LOCAL_NEST
from agen.hub.call_keys import CALL_KEY, ensure_call_key
from agen.hub.fleet.definitions import put_definition
from agen.hub.sealing import ENV_KEK, is_sealed
from agen.hub.service import Hub
from agen.nest.client_port import ClientHubPort
from agen.store import Tx
from tests.runner_helpers import open_store
from tests.unit.queue_helpers import add_deployment, new_task

NOW = 1_800_000_000_000
WHO = CallIdentity("ops", "triage", "inst-1", 2, NOW, NOW + 3_600_000)


def test_a_minted_token_verifies_to_the_identity_it_carries() -> None:
    key = Ed25519PrivateKey.generate()
    token = mint_call_token(key, WHO)
    got = verify_call_token(token, key.public_key(), NOW + 1000)
    assert got == WHO
    assert got.caller == "agent:ops/triage"


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
        (lambda t, k: _retouch(t, dep="admin-bot"), "signature does not verify"),
        (
            lambda t, k: mint_call_token(Ed25519PrivateKey.generate(), WHO),
            "signature does not verify",
        ),
        (lambda t, k: t.replace("agen-ct1.", "agen-ct9."), "not an agen call token"),
        (lambda t, k: "Bearer nonsense", "not an agen call token"),
        (lambda t, k: t[:-4], "signature does not verify"),
    ],
    ids=[
        "depth-changed",
        "deployment-changed",
        "wrong-key",
        "wrong-prefix",
        "garbage",
        "cut-short",
    ],
)
def test_a_tampered_or_foreign_token_is_refused(make_bad: object, why: str) -> None:
    key = Ed25519PrivateKey.generate()
    bad = make_bad(mint_call_token(key, WHO), key)  # type: ignore[operator]
    with pytest.raises(UnauthenticatedError, match=why) as e:
        verify_call_token(bad, key.public_key(), NOW)
    assert e.value.message.startswith("call token refused: ")


def test_an_expired_token_is_refused_naming_its_caller() -> None:
    key = Ed25519PrivateKey.generate()
    token = mint_call_token(key, WHO)
    with pytest.raises(UnauthenticatedError, match=r"expired 5s ago \(caller agent:ops/triage\)"):
        verify_call_token(token, key.public_key(), WHO.expires_ms + 5_000)


async def test_the_hub_key_is_made_once_per_store_and_sealed_under_the_kek(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_KEK, "k" * 40)
    store = await open_store(tmp_path)
    first = await ensure_call_key(store)
    call_keys._cache.clear()  # another Hub process on the same store
    second = await ensure_call_key(store)
    assert first.public_raw_b64 == second.public_raw_b64
    stored = await store.scalar("SELECT value FROM hub_keys WHERE name = ?", (CALL_KEY,))
    assert is_sealed(str(stored))
    await store.close()


async def test_a_leased_task_carries_a_call_token_for_its_instance_and_depth(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    hub = Hub(store, clock=lambda: NOW)
    dep = await store.write(lambda tx: add_deployment(tx))
    await store.write(lambda tx: _use_bundle(tx, dep, a2a=True))
    task, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, "go")))
    await store.write(lambda tx: tx.execute("UPDATE tasks SET depth = 2 WHERE id = ?", (task.id,)))
    port = ClientHubPort(Client.in_process(hub, LOCAL_NEST))
    nest_id = await port.register("n1", 4, {})
    await store.write(
        lambda tx: tx.execute(
            "INSERT INTO assignments (deployment_id, nest_id, count, digest, leader_epoch, updated_ms)"
            " VALUES (?,?,?,?,?,?)",
            (dep, nest_id, 1, "sha256:" + "0" * 64, 1, tx.now_ms),
        )
    )
    [leased] = await port.lease(nest_id, "inst-7", dep, 1, 60_000)
    assert leased.id == task.id and leased.call_token is not None
    key = await ensure_call_key(store)
    who = verify_call_token(leased.call_token, key.public, NOW + 1)
    assert (who.namespace, who.deployment, who.instance, who.depth) == ("default", "d", "inst-7", 2)
    assert who.expires_ms == NOW + 3_600_000
    await store.close()


async def test_a_deployment_without_a2a_delegates_gets_no_call_token_and_no_key_is_made(
    tmp_path: Path,
) -> None:
    """Signing is for agents that call over A2A: a plain lease costs no signature and no key."""
    store = await open_store(tmp_path)
    hub = Hub(store, clock=lambda: NOW)
    dep = await store.write(lambda tx: add_deployment(tx))
    await store.write(lambda tx: _use_bundle(tx, dep, a2a=False))
    await store.write(lambda tx: q.submit_task(tx, new_task(dep, "go")))
    port = ClientHubPort(Client.in_process(hub, LOCAL_NEST))
    nest_id = await port.register("n1", 4, {})
    await store.write(
        lambda tx: tx.execute(
            "INSERT INTO assignments (deployment_id, nest_id, count, digest, leader_epoch, updated_ms)"
            " VALUES (?,?,?,?,?,?)",
            (dep, nest_id, 1, "sha256:" + "0" * 64, 1, tx.now_ms),
        )
    )
    [leased] = await port.lease(nest_id, "inst-7", dep, 1, 60_000)
    assert leased.call_token is None
    assert await store.scalar("SELECT value FROM hub_keys WHERE name = ?", (CALL_KEY,)) is None
    await store.close()


def _use_bundle(tx: Tx, deployment_id: str, *, a2a: bool) -> None:
    """Point the deployment at a real stored bundle (bundles/hello), with a url delegate if ``a2a``."""
    root = Path(__file__).parents[2] / "bundles" / "hello"
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    if a2a:
        config = json.loads(files["x-agen/config.json"])
        config["delegates"] = [{"name": "remote", "url": "http://127.0.0.1:9/"}]
        files["x-agen/config.json"] = json.dumps(config).encode()
    def_id = put_definition(tx, "d-" + ("a2a" if a2a else "plain"), digest_files(files), files)
    tx.execute("UPDATE deployments SET definition_id = ? WHERE id = ?", (def_id, deployment_id))


async def test_a_nest_fetches_the_hub_public_key_and_verifies_a_call_token_with_it(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    hub = Hub(store, clock=lambda: NOW)
    port = ClientHubPort(Client.in_process(hub, LOCAL_NEST))
    [raw] = await port.token_keys()
    key = await ensure_call_key(store)
    token = call_keys.agent_token(
        key, namespace="default", deployment="d", instance="i", depth=1, now_ms=NOW
    )
    who = verify_call_token(token, public_key_from_raw(base64.b64decode(raw)), NOW + 1)
    assert (who.deployment, who.depth) == ("d", 1)
    await store.close()
