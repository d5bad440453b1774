"""Platform secrets (seed 000 §10): bundle secrets with ``source: platform``, kept by the Hub per namespace.

An admin sets a value (``agen secret set``, value on stdin) and grants it to named deployments; the
Hub stores it sealed under the KEK (agen.hub.sealing; plaintext only when no KEK is set, as the
Hub's own keys) and never returns it through the API. A Nest receives the values of one deployment
it runs (``GetPlatformSecrets``): only names that deployment's current definition declares with
``source: platform`` *and* that are granted to it. Declaring a name in a bundle does not grant it.

``rotate_kek`` re-seals every sealed value (these, and the CA and call-token private keys in
``hub_keys``) under a new KEK in one transaction; ``seal_in_place`` seals values stored before a KEK
was set, at Hub start.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import NamedTuple

from pydantic import ValidationError

from agen.bundle.agent import Secrets
from agen.domain import DeploymentRef, DeploymentRow, columns
from agen.errors import InvalidError, NotFoundError
from agen.hub.call_keys import is_private_key_row
from agen.hub.definitions import unpack
from agen.hub.sealing import is_sealed, kek_from_env, seal, unseal
from agen.store import Store, Tx

log = logging.getLogger("agen.hub.secrets")
SECRETS_FILE = "x-agen/secrets.json"
SEALED_HUB_KEYS = ("ca_key",)
"""The ``hub_keys`` rows that are secret besides the call-token private keys (the CA certificate and
the public keys are public): sealed in place, re-sealed on rotation."""


def sealing_name(namespace: str, name: str) -> str:
    """The associated data a platform secret is sealed with: a value copied to another name won't open."""
    return f"platform_secret/{namespace}/{name}"


@dataclass(frozen=True)
class SecretInfo:
    """What the API shows of a platform secret: never its value."""

    namespace: str
    name: str
    grants: list[str]
    sealed: bool
    created_ms: int
    updated_ms: int
    updated_by: str | None


class _Stored(NamedTuple):
    """One row of ``platform_secrets``: its value sealed (or plaintext without a KEK), its grants
    a JSON list of deployment names."""

    namespace: str
    name: str
    value: str
    grants: str
    created_ms: int
    updated_ms: int
    updated_by: str | None


class _Grants(NamedTuple):
    value: str
    grants: str


class _SecretValue(NamedTuple):
    namespace: str
    name: str
    value: str


class _KeyValue(NamedTuple):
    """A row of ``hub_keys``."""

    name: str
    value: str


_SELECT = f"SELECT {columns(_Stored)} FROM platform_secrets"


def _info(row: _Stored) -> SecretInfo:
    return SecretInfo(
        namespace=row.namespace,
        name=row.name,
        grants=list(json.loads(row.grants or "[]")),
        sealed=is_sealed(row.value),
        created_ms=int(row.created_ms),
        updated_ms=int(row.updated_ms),
        updated_by=row.updated_by,
    )


def set_secret(
    tx: Tx,
    namespace: str,
    name: str,
    value: str,
    *,
    grants: list[str] | None,
    by: str,
    kek: bytes | None,
) -> SecretInfo:
    """Create or replace a secret's value; ``grants`` replaces its grants (None keeps them)."""
    if not value:
        raise InvalidError(f"secret {name}: the value is empty; pass it on stdin", secret=name)
    old = tx.scalar(
        "SELECT grants FROM platform_secrets WHERE namespace = ? AND name = ?", (namespace, name)
    )
    kept: list[str] = json.loads(old) if old is not None else []
    granted = sorted(set(grants)) if grants is not None else kept
    stored = seal(sealing_name(namespace, name), value, kek)
    tx.execute(
        "INSERT INTO platform_secrets (namespace, name, value, grants, created_ms, updated_ms, updated_by)"
        " VALUES (?,?,?,?,?,?,?) ON CONFLICT (namespace, name) DO UPDATE SET value = excluded.value,"
        " grants = excluded.grants, updated_ms = excluded.updated_ms, updated_by = excluded.updated_by",
        (namespace, name, stored, json.dumps(granted), tx.now_ms, tx.now_ms, by),
    )
    tx.event(
        namespace,
        "secret.set",
        data={"name": name, "grants": granted, "sealed": is_sealed(stored)},
    )
    row = tx.row(_Stored, f"{_SELECT} WHERE namespace = ? AND name = ?", (namespace, name))
    assert row is not None
    return _info(row)


def list_secrets(tx: Tx, namespace: str) -> list[SecretInfo]:
    rows = tx.rows(_Stored, f"{_SELECT} WHERE namespace = ? ORDER BY name", (namespace,))
    return [_info(r) for r in rows]


def delete_secret(tx: Tx, namespace: str, name: str) -> None:
    if not tx.execute(
        "DELETE FROM platform_secrets WHERE namespace = ? AND name = ?", (namespace, name)
    ):
        raise NotFoundError(
            f"no platform secret {name!r} in namespace {namespace!r}; `agen secret ls` lists them",
            secret=name,
            namespace=namespace,
        )
    tx.event(namespace, "secret.deleted", data={"name": name})


def declared_platform(tx: Tx, definition_id: str) -> list[str]:
    """The names a stored definition declares with ``source: platform`` (x-agen/secrets.json)."""
    files = tx.scalar("SELECT files FROM definitions WHERE id = ?", (definition_id,))
    if not files:
        return []
    raw = unpack(bytes(files)).get(SECRETS_FILE)
    if raw is None:
        return []
    try:
        secrets = Secrets.model_validate(json.loads(raw))
    except (ValueError, ValidationError):
        return []  # validated at deploy; a definition without readable secrets declares none
    return sorted(n for n, spec in secrets.secrets.items() if spec.source == "platform")


def granted_value(
    tx: Tx, namespace: str, deployment: str, name: str, kek: bytes | None
) -> str | None:
    """The plaintext of ``name`` if it is granted to ``deployment``, else None."""
    row = tx.row(
        _Grants,
        f"SELECT {columns(_Grants)} FROM platform_secrets WHERE namespace = ? AND name = ?",
        (namespace, name),
    )
    if row is None or deployment not in json.loads(row.grants or "[]"):
        return None
    return unseal(sealing_name(namespace, name), str(row.value), kek)


def values_for_deployment(
    tx: Tx, deployment: DeploymentRow | DeploymentRef, kek: bytes | None
) -> dict[str, str]:
    """What a Nest running ``deployment`` receives: its declared platform names that are granted to it."""
    ns, dep = deployment.namespace, deployment.name
    out: dict[str, str] = {}
    for name in declared_platform(tx, deployment.definition_id):
        value = granted_value(tx, ns, dep, name, kek)
        if value is not None:
            out[name] = value
    return out


def _sealed_rows(tx: Tx) -> list[tuple[str, tuple[str, ...], str, str]]:
    """Every stored secret value: (table, key, sealing name, stored value)."""
    rows: list[tuple[str, tuple[str, ...], str, str]] = []
    for r in tx.rows(
        _SecretValue,
        f"SELECT {columns(_SecretValue)} FROM platform_secrets ORDER BY namespace, name",
    ):
        ns, name = r.namespace, r.name
        rows.append(("platform_secrets", (ns, name), sealing_name(ns, name), r.value))
    for k in tx.rows(_KeyValue, f"SELECT {columns(_KeyValue)} FROM hub_keys ORDER BY name"):
        if k.name in SEALED_HUB_KEYS or is_private_key_row(k.name):
            rows.append(("hub_keys", (k.name,), k.name, k.value))
    return rows


def _write(tx: Tx, table: str, key: tuple[str, ...], value: str) -> None:
    if table == "platform_secrets":
        tx.execute(
            "UPDATE platform_secrets SET value = ? WHERE namespace = ? AND name = ?", (value, *key)
        )
    else:
        tx.execute("UPDATE hub_keys SET value = ? WHERE name = ?", (value, *key))


def seal_in_place(tx: Tx, kek: bytes | None) -> int:
    """Seal values stored before a KEK was set (a Hub starting with one); how many were sealed."""
    if kek is None:
        return 0
    count = 0
    for table, key, name, stored in _sealed_rows(tx):
        if not is_sealed(stored):
            _write(tx, table, key, seal(name, stored, kek))
            count += 1
    return count


async def seal_stored(store: Store) -> int:
    """At Hub start: with a KEK set, seal what was stored before it was (logged when there was any)."""
    kek = kek_from_env()
    if kek is None:
        return 0
    count = await store.write(lambda tx: seal_in_place(tx, kek))
    if count:
        log.warning(
            "agen hub: sealed %d secret value(s) stored before AGEN_HUB_KEK was set; older copies "
            "remain in backups and WAL: rotate those secrets",
            count,
        )
    return count


def rotate_kek(tx: Tx, old: bytes | None, new: bytes) -> int:
    """Re-seal every secret value under ``new`` (unsealed ones are sealed); how many were written.

    A value that does not open with ``old`` fails the whole transaction, so nothing is half-rotated.
    """
    rows = _sealed_rows(tx)
    for table, key, name, stored in rows:
        _write(tx, table, key, seal(name, unseal(name, stored, old), new))
    return len(rows)
