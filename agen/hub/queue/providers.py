"""Provider holds (seed 000 §8): an account error holds the provider account, not just one task.

An account is ``<namespace>/<provider>:<key secret name>[@<baseUrl>]``. While held, the
account's deployments lease nothing until ``retry_at``; then exactly one probe task is leased.
A probe failing with another account error backs off (5 min doubling, at most 1 h); any run of
the account's deployments that succeeds after the hold began ends it, as does ResumeProvider.

A hold belongs to the key value it failed with: the runner reports a fingerprint of the key
(agen.crypto.keyprint, never the key) and the Hub remembers the environment variable each deployment
reads it from. Once that variable holds a different key, the hold no longer applies (a changed
key is a new account) and the next tick ends it. Without a fingerprint on either side (no key,
or a platform secret) the hold applies as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from agen.bundle.harness import DEFAULT_KEY_SECRET
from agen.crypto.keyprint import env_key_fingerprint
from agen.errors import NotFoundError
from agen.store import Row, Tx
from agen.util.backoff import next_backoff

FIRST_BACKOFF_MS = 5 * 60_000
MAX_BACKOFF_MS = 60 * 60_000
ACCOUNT_ERROR_REASONS = frozenset({"provider_account", "account_error", "provider_account_error"})
_UNFINISHED = ("queued", "leased", "running", "waiting")


def account_id(namespace: str, provider: str, key_secret: str, base_url: str | None = None) -> str:
    base = f"{namespace}/{provider}:{key_secret}"
    return f"{base}@{base_url.rstrip('/')}" if base_url else base


def harness_key_secrets(namespace: str, harness: Mapping[str, Any]) -> dict[str, str]:
    """Account -> the name of its key secret, for a harness (camelCase dict as in harness.json):
    primary, then fallbacks. fake and replay providers have no account to hold."""
    out: dict[str, str] = {}
    entries = [harness, *list(harness.get("fallbackProviders") or [])]
    for entry in entries:
        provider = str(entry.get("provider") or harness.get("provider") or "")
        if provider not in DEFAULT_KEY_SECRET:
            continue
        key = str(entry.get("apiKeySecret") or DEFAULT_KEY_SECRET[provider])
        out.setdefault(account_id(namespace, provider, key, entry.get("baseUrl")), key)
    return out


def harness_accounts(namespace: str, harness: Mapping[str, Any]) -> list[str]:
    """Accounts a harness can call: primary, then fallbacks."""
    return list(harness_key_secrets(namespace, harness))


def sync_accounts(
    tx: Tx,
    deployment_id: str,
    accounts: Iterable[str],
    key_envs: Mapping[str, str | None] | None = None,
) -> None:
    """Remember which accounts a deployment uses (on deploy), so a hold reaches all of them, and the
    environment variable each one's key is read from (``key_envs``), so a changed key ends its hold."""
    envs = key_envs or {}
    tx.execute("DELETE FROM provider_accounts WHERE deployment_id = ?", (deployment_id,))
    tx.executemany(
        "INSERT INTO provider_accounts (deployment_id, account, key_env) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        [(deployment_id, a, envs.get(a)) for a in accounts],
    )


class ProviderHoldRow(NamedTuple):
    """One row of ``provider_holds`` (0001_core.sql, 0010)."""

    account: str
    namespace: str
    provider: str
    reason: str
    held_since_ms: int
    retry_at_ms: int
    backoff_ms: int
    probe_task_id: str | None = None
    resumed_ms: int | None = None
    key_fingerprint: str | None = None


class _HeldAccount(NamedTuple):
    """A hold not yet ended, joined with the environment variable its account's key is read from."""

    account: str
    namespace: str
    held_since_ms: int
    retry_at_ms: int
    probe_task_id: str | None
    key_fingerprint: str | None
    key_env: str | None


class _HeldDeployment(NamedTuple):
    """A deployment using a held account, and what tells whether its key changed since."""

    deployment_id: str
    key_env: str | None
    key_fingerprint: str | None


def key_changed(row: _HeldAccount | _HeldDeployment) -> bool:
    """Does the key the hold failed with differ from the one agen's environment holds now?

    ``row``: a hold joined with provider_accounts.key_env. Unknown on either side reads as unchanged."""
    held = row.key_fingerprint
    now = env_key_fingerprint(row.key_env)
    return bool(held and now and held != now)


def _split(account: str) -> tuple[str, str]:
    namespace, _, rest = account.partition("/")
    return namespace, rest.partition(":")[0]


def record_account_error(
    tx: Tx,
    account: str,
    *,
    reason: str,
    deployment_id: str | None = None,
    task_id: str | None = None,
    key_fingerprint: str | None = None,
) -> ProviderHoldRow:
    """Hold ``account`` (or back a failed probe off further); returns the hold row.

    A failure with another key than the held one starts a new hold for that key."""
    now = tx.now_ms
    namespace, provider = _split(account)
    if deployment_id is not None:
        tx.execute(
            "INSERT INTO provider_accounts (deployment_id, account) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (deployment_id, account),
        )
    row = _find(tx, account)
    same_key = row is not None and (
        row.key_fingerprint == key_fingerprint or key_fingerprint is None
    )
    if row is not None and row.resumed_ms is None and same_key:
        if task_id is not None and task_id == row.probe_task_id:
            backoff = next_backoff(row.backoff_ms, FIRST_BACKOFF_MS, MAX_BACKOFF_MS)
            tx.execute(
                "UPDATE provider_holds SET backoff_ms = ?, retry_at_ms = ?, probe_task_id = NULL, reason = ?"
                " WHERE account = ?",
                (backoff, now + backoff, reason, account),
            )
        return _get(tx, account)
    tx.execute(
        "INSERT INTO provider_holds (account, namespace, provider, reason, held_since_ms, retry_at_ms,"
        " backoff_ms, probe_task_id, resumed_ms, key_fingerprint) VALUES (?,?,?,?,?,?,?,NULL,NULL,?)"
        " ON CONFLICT (account) DO UPDATE SET reason = excluded.reason, held_since_ms = excluded.held_since_ms,"
        " retry_at_ms = excluded.retry_at_ms, backoff_ms = excluded.backoff_ms, probe_task_id = NULL,"
        " resumed_ms = NULL, key_fingerprint = excluded.key_fingerprint",
        (
            account,
            namespace,
            provider,
            reason,
            now,
            now + FIRST_BACKOFF_MS,
            FIRST_BACKOFF_MS,
            key_fingerprint,
        ),
    )
    tx.event(
        namespace,
        "provider.held",
        severity="warning",
        task_id=task_id,
        data={
            "account": account,
            "reason": reason,
            "retry_at_ms": now + FIRST_BACKOFF_MS,
            "key_fingerprint": key_fingerprint,
        },
    )
    return _get(tx, account)


def _find(tx: Tx, account: str) -> ProviderHoldRow | None:
    return tx.row(ProviderHoldRow, "SELECT * FROM provider_holds WHERE account = ?", (account,))


def _get(tx: Tx, account: str) -> ProviderHoldRow:
    row = _find(tx, account)
    assert row is not None
    return row


def account_error(outcome: Mapping[str, Any] | None) -> str | None:
    """The account an outcome blames, if the task failed with a provider account error.

    The runner reports ``reason`` in ACCOUNT_ERROR_REASONS and the account in ``data.account``;
    an empty string means "an account of this deployment" (the caller picks its first).
    """
    if not outcome or outcome.get("reason") not in ACCOUNT_ERROR_REASONS:
        return None
    data = outcome.get("data")
    return str(data.get("account") or "") if isinstance(data, Mapping) else ""


def hold_note(hold: ProviderHoldRow) -> str:
    """What a hold means and how to end it, said on the task whose failure started it."""
    retry = datetime.fromtimestamp(hold.retry_at_ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"provider account {hold.account} is now held: its deployments lease no tasks until {retry} "
        "(then one probe), or until a run of them succeeds; a changed key ends the hold, and "
        f"`agen providers resume {hold.account}` ends it now"
    )


def on_task_failed(
    tx: Tx,
    task_id: str,
    deployment_id: str,
    outcome: Mapping[str, Any] | None,
    error: str | None,
) -> ProviderHoldRow | None:
    """Hook for CompleteTask: hold the account when a task failed with an account error; a new hold is
    explained on the task's error (what is held, until when, how to end it)."""
    blamed = account_error(outcome)
    if blamed is None:
        return None
    if not blamed:
        first = tx.scalar(
            "SELECT account FROM provider_accounts WHERE deployment_id = ? ORDER BY account LIMIT 1",
            (deployment_id,),
        )
        if first is None:
            return None
        blamed = str(first)
    reason = str((outcome or {}).get("summary") or error or "provider account error")[:500]
    data = (outcome or {}).get("data")
    fingerprint = data.get("key_fingerprint") if isinstance(data, Mapping) else None
    before = tx.scalar(
        "SELECT held_since_ms FROM provider_holds WHERE account = ? AND resumed_ms IS NULL",
        (blamed,),
    )
    hold = record_account_error(
        tx,
        blamed,
        reason=reason,
        deployment_id=deployment_id,
        task_id=task_id,
        key_fingerprint=str(fingerprint) if fingerprint else None,
    )
    if (
        hold.held_since_ms != before
    ):  # this failure started the hold: say so where the user looks first
        note = hold_note(hold)
        tx.execute(
            "UPDATE tasks SET error = ? WHERE id = ?",
            (f"{error}; {note}" if error else note, task_id),
        )
    return hold


GateState = Literal["open", "held", "probe"]


@dataclass(frozen=True)
class LeaseGate:
    """What leasing may do for one deployment now."""

    state: GateState
    account: str | None = None
    retry_at_ms: int | None = None

    @property
    def limit(self) -> int | None:
        """Most tasks to lease now: None (no cap), 0 (held) or 1 (the probe)."""
        return {"open": None, "held": 0, "probe": 1}[self.state]


def lease_gate(tx: Tx, deployment_id: str, now_ms: int) -> LeaseGate:
    """Held until retry_at; then one probe at a time; open when no account of it is held."""
    rows = [
        r
        for r in tx.rows(
            _HeldAccount,
            "SELECT h.*, a.key_env FROM provider_holds h JOIN provider_accounts a ON a.account = h.account"
            " WHERE a.deployment_id = ? AND h.resumed_ms IS NULL ORDER BY h.retry_at_ms DESC",
            (deployment_id,),
        )
        if not key_changed(r)
    ]
    if not rows:
        return LeaseGate("open")
    for row in rows:
        if row.retry_at_ms > now_ms:
            return LeaseGate("held", row.account, row.retry_at_ms)
        probe = row.probe_task_id
        if probe is not None:
            state = tx.scalar("SELECT state FROM tasks WHERE id = ?", (probe,))
            if state in _UNFINISHED:
                return LeaseGate("held", row.account, row.retry_at_ms)
    return LeaseGate("probe", rows[0].account, rows[0].retry_at_ms)


def mark_probe(tx: Tx, deployment_id: str, task_id: str) -> None:
    """Record the task leased through a probe gate as the probe of every held account it uses."""
    tx.execute(
        "UPDATE provider_holds SET probe_task_id = ? WHERE resumed_ms IS NULL AND account IN"
        " (SELECT account FROM provider_accounts WHERE deployment_id = ?)",
        (task_id, deployment_id),
    )


def _resume(tx: Tx, row: ProviderHoldRow | _HeldAccount, why: str, by: str | None = None) -> None:
    tx.execute(
        "UPDATE provider_holds SET resumed_ms = ? WHERE account = ?", (tx.now_ms, row.account)
    )
    tx.event(
        row.namespace,
        "provider.resumed",
        data={
            "account": row.account,
            "why": why,
            "by": by,
            "held_since_ms": row.held_since_ms,
        },
    )


def end_recovered_holds(tx: Tx) -> list[str]:
    """Scheduler tick: end holds whose deployments had a run succeed after the hold began, or whose key
    was changed since (a new key is a new account)."""
    ended: list[str] = []
    for row in tx.rows(
        _HeldAccount,
        "SELECT h.*, (SELECT a.key_env FROM provider_accounts a WHERE a.account = h.account"
        " AND a.key_env IS NOT NULL LIMIT 1) AS key_env FROM provider_holds h"
        " WHERE h.resumed_ms IS NULL",
    ):
        if key_changed(row):
            _resume(tx, row, "the key was changed")
            ended.append(row.account)
            continue
        ok = tx.scalar(
            "SELECT 1 FROM runs r JOIN deployments d ON d.namespace = r.namespace AND d.name = r.deployment"
            " JOIN provider_accounts a ON a.deployment_id = d.id"
            " WHERE a.account = ? AND r.status = 'succeeded' AND r.finished_ms >= ? LIMIT 1",
            (row.account, row.held_since_ms),
        )
        if ok:
            _resume(tx, row, "a run succeeded")
            ended.append(row.account)
    return ended


def resume_provider(tx: Tx, account: str, *, by: str | None = None) -> Row:
    """ResumeProvider (admin): end a hold at once. The hold as a column -> value mapping, as the
    RPC (agen.hub.rpc.providers) builds its wire ProviderHold from."""
    row = tx.row(
        ProviderHoldRow,
        "SELECT * FROM provider_holds WHERE account = ? AND resumed_ms IS NULL",
        (account,),
    )
    if row is None:
        raise NotFoundError(
            f"no provider account {account!r} is held; `agen providers` lists held accounts",
            account=account,
        )
    _resume(tx, row, "resumed by an operator", by)
    return _get(tx, account)._asdict()


def held_deployment_ids(tx: Tx, now_ms: int) -> set[str]:
    """Deployments the autoscaler must not scale up for queued work (hold still before retry_at)."""
    rows = tx.rows(
        _HeldDeployment,
        "SELECT a.deployment_id, a.key_env, h.key_fingerprint FROM provider_holds h"
        " JOIN provider_accounts a ON a.account = h.account WHERE h.resumed_ms IS NULL AND h.retry_at_ms > ?",
        (now_ms,),
    )
    return {r.deployment_id for r in rows if not key_changed(r)}


def list_holds(
    tx: Tx, namespaces: Iterable[str] | None = None, *, include_resumed: bool = False
) -> list[Row]:
    """The holds, newest first, each as a column -> value mapping (as ``resume_provider``'s)."""
    sql = "SELECT * FROM provider_holds"
    where = [] if include_resumed else ["resumed_ms IS NULL"]
    params: list[Any] = []
    ns = list(namespaces or [])
    if ns:
        where.append(f"namespace IN ({','.join('?' * len(ns))})")
        params.extend(ns)
    if where:
        sql += " WHERE " + " AND ".join(where)
    return [
        h._asdict() for h in tx.rows(ProviderHoldRow, sql + " ORDER BY held_since_ms DESC", params)
    ]
