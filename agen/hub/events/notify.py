"""Notification targets: where the Hub POSTs a namespace's events (seed 000 §11).

The leader delivers every tick: per target, in seq order from its stored cursor, one event at a
time. A failure pauses the target with a growing back-off (to 5 min) and stores the error; an
event that keeps failing for an hour is dropped and counted, so one bad event cannot wedge a
target forever. Deliveries are signed (HMAC-SHA256 of the body) when the target names a secret.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from agen.domain import columns
from agen.errors import InvalidError, NotFoundError
from agen.hub.events.log import EventFilter, read_events
from agen.store import Store, Tx, dumps, event_log, loads, new_ulid
from agen.util.backoff import next_backoff
from agen.util.canonical import canonical_json

MAX_BACKOFF_MS = 5 * 60_000
FIRST_BACKOFF_MS = 1_000
DROP_AFTER_MS = 60 * 60_000
SIGNATURE_HEADER = "X-Agen-Signature"
PER_TICK = 20

if TYPE_CHECKING:
    import httpx

SecretResolver = Callable[[str, str], str | None]


class NotifyTargetRow(NamedTuple):
    """One row of ``notify_targets`` (0006_triggers.sql). JSON columns stay text."""

    id: str
    namespace: str
    name: str
    url: str
    events: str  # JSON text: type filters
    deployment: str | None
    labels: str  # JSON text
    severity: str | None
    secret: str | None  # the platform secret's name, never its value
    cursor_seq: int
    paused_until_ms: int | None
    backoff_ms: int
    failing_since_ms: int | None
    last_error: str | None
    delivered: int
    dropped: int
    created_ms: int
    updated_ms: int


def sign(body: bytes, secret: str, *, algorithm: str = "sha256", encoding: str = "hex") -> str:
    """The HMAC of ``body`` a sender computes: the Hub signs its deliveries with it, and a webhook
    caller's signature is checked against it (agen.hub.triggers.verify)."""
    mac = hmac.new(
        secret.encode(), body, hashlib.sha1 if algorithm == "sha1" else hashlib.sha256
    ).digest()
    return base64.b64encode(mac).decode() if encoding == "base64" else mac.hex()


def set_target(
    tx: Tx,
    namespace: str,
    name: str,
    url: str,
    *,
    events: Iterable[str] = (),
    deployment: str | None = None,
    labels: dict[str, str] | None = None,
    severity: str | None = None,
    secret: str | None = None,
) -> NotifyTargetRow:
    """Create or replace a target; a new one starts at the newest event (no back-fill)."""
    if not url.startswith(("http://", "https://")):
        raise InvalidError(f"notification URL must be http(s) (got {url!r})", field="url")
    EventFilter(severity=severity)  # validates
    now = tx.now_ms
    start = int(tx.scalar(event_log.head_sql(tx.dialect)) or 0)
    tx.execute(
        "INSERT INTO notify_targets (id, namespace, name, url, events, deployment, labels, severity, secret,"
        " cursor_seq, created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT (namespace, name) DO UPDATE SET url = excluded.url, events = excluded.events,"
        " deployment = excluded.deployment, labels = excluded.labels, severity = excluded.severity,"
        " secret = excluded.secret, paused_until_ms = NULL, backoff_ms = 0, last_error = NULL,"
        " updated_ms = excluded.updated_ms",
        (
            new_ulid(),
            namespace,
            name,
            url,
            dumps(sorted(set(events))),
            deployment,
            dumps(labels or {}),
            severity,
            secret,
            start,
            now,
            now,
        ),
    )
    row = tx.row(
        NotifyTargetRow,
        f"SELECT {columns(NotifyTargetRow)} FROM notify_targets WHERE namespace = ? AND name = ?",
        (namespace, name),
    )
    assert row is not None  # written in this transaction
    return row


def bundle_target_name(deployment: str) -> str:
    return f"{deployment}.approvals"


def sync_bundle_target(tx: Tx, namespace: str, deployment: str, url: str | None) -> None:
    """A bundle's ``permissions.notify``: its deployment's new pending approvals (approval.requested) are
    POSTed to that URL. Kept as the target ``<deployment>.approvals`` (so `agen notify ls` shows its
    deliveries and errors); deploying without it, or deleting the deployment, removes it."""
    name = bundle_target_name(deployment)
    if url is None:
        tx.execute("DELETE FROM notify_targets WHERE namespace = ? AND name = ?", (namespace, name))
        return
    if not url.startswith(("http://", "https://")):
        raise InvalidError(
            f"permissions.notify of {deployment} must be an http(s) URL (got {url!r})",
            field="permissions.notify",
        )
    set_target(tx, namespace, name, url, events=["approval.requested"], deployment=deployment)


def delete_target(tx: Tx, namespace: str, name: str) -> None:
    if (
        tx.execute("DELETE FROM notify_targets WHERE namespace = ? AND name = ?", (namespace, name))
        == 0
    ):
        raise NotFoundError(
            f"no notification target {name!r} in namespace {namespace!r}; `agen notify ls` lists them",
            namespace=namespace,
            name=name,
        )


def target_view(row: NotifyTargetRow) -> dict[str, Any]:
    """A target as the API shows it (filters decoded)."""
    out = row._asdict()
    out["events"] = loads(row.events, [])
    out["labels"] = loads(row.labels, {})
    return out


def target_filter(row: NotifyTargetRow) -> EventFilter:
    return EventFilter(
        types=tuple(loads(row.events, [])),
        labels=loads(row.labels, {}),
        deployment=row.deployment,
        severity=row.severity,
    )


@dataclass
class DeliveryReport:
    delivered: int = 0
    failed: int = 0
    dropped: int = 0
    errors: dict[str, str] = field(default_factory=dict)


def body_of(event: dict[str, Any]) -> bytes:
    return canonical_json(event).encode()


async def _post(
    client: httpx.AsyncClient, row: NotifyTargetRow, event: dict[str, Any], secrets: SecretResolver
) -> str | None:
    """POST one event; None on a 2xx, else the error to store on the target."""
    body = body_of(event)
    headers = {
        "Content-Type": "application/json",
        "X-Agen-Event": event["type"],
        "X-Agen-Delivery": event["id"],
    }
    if row.secret:
        value = secrets(row.namespace, row.secret)
        if value is None:
            return (
                f"secret {row.secret} is not set in namespace {row.namespace}; `agen secret set` it"
            )
        headers[SIGNATURE_HEADER] = "sha256=" + sign(body, value)
    import httpx

    try:
        resp = await client.post(row.url, content=body, headers=headers, timeout=10.0)
    except httpx.HTTPError as e:
        return f"{type(e).__name__}: {e}"[:500]
    if 200 <= resp.status_code < 300:
        return None
    return f"HTTP {resp.status_code}: {resp.text[:200]}"


async def deliver_target(
    store: Store,
    client: httpx.AsyncClient,
    row: NotifyTargetRow,
    now_ms: int,
    secrets: SecretResolver,
    report: DeliveryReport,
) -> None:
    """Deliver this target's pending events in order until one fails (or PER_TICK were sent)."""
    if row.paused_until_ms is not None and row.paused_until_ms > now_ms:
        return
    cursor = row.cursor_seq
    flt = target_filter(row)
    for _ in range(PER_TICK):
        page = await read_events(store, [row.namespace], after=cursor, flt=flt, limit=1)
        if not page.events:
            if page.cursor != cursor:
                await store.write(partial(_advance, target_id=row.id, old=cursor, new=page.cursor))
            return
        event = page.events[0]
        error = await _post(client, row, event, secrets)
        old = cursor
        cursor = int(event["seq"])
        if error is None:
            report.delivered += 1
            await store.write(partial(_delivered, target_id=row.id, old=old, new=cursor))
            continue
        report.errors[row.name] = error
        outcome = await store.write(
            partial(_failed, target_id=row.id, old=old, seq=cursor, error=error, now_ms=now_ms)
        )
        if outcome == "dropped":
            report.dropped += 1
        else:
            report.failed += 1
        return


def _advance(tx: Tx, target_id: str, old: int, new: int) -> None:
    tx.execute(
        "UPDATE notify_targets SET cursor_seq = ? WHERE id = ? AND cursor_seq = ?",
        (new, target_id, old),
    )


def _delivered(tx: Tx, target_id: str, old: int, new: int) -> None:
    tx.execute(
        "UPDATE notify_targets SET cursor_seq = ?, delivered = delivered + 1, paused_until_ms = NULL,"
        " backoff_ms = 0, failing_since_ms = NULL, last_error = NULL, updated_ms = ?"
        " WHERE id = ? AND cursor_seq = ?",
        (new, tx.now_ms, target_id, old),
    )


class _Backoff(NamedTuple):
    """How long a target has been failing on the event at its cursor, and its back-off so far."""

    failing_since_ms: int | None
    backoff_ms: int


def _failed(tx: Tx, target_id: str, old: int, seq: int, error: str, now_ms: int) -> str:
    row = tx.row(
        _Backoff,
        f"SELECT {columns(_Backoff)} FROM notify_targets WHERE id = ? AND cursor_seq = ?",
        (target_id, old),
    )
    if row is None:
        return "gone"
    since = row.failing_since_ms if row.failing_since_ms is not None else now_ms
    backoff = next_backoff(row.backoff_ms, FIRST_BACKOFF_MS, MAX_BACKOFF_MS)
    if now_ms - since >= DROP_AFTER_MS:
        tx.execute(
            "UPDATE notify_targets SET cursor_seq = ?, dropped = dropped + 1, failing_since_ms = NULL,"
            " paused_until_ms = ?, backoff_ms = ?, last_error = ?, updated_ms = ? WHERE id = ?",
            (
                seq,
                now_ms + backoff,
                backoff,
                f"dropped event {seq} after failing for an hour: {error}",
                tx.now_ms,
                target_id,
            ),
        )
        return "dropped"
    tx.execute(
        "UPDATE notify_targets SET failing_since_ms = ?, paused_until_ms = ?, backoff_ms = ?, last_error = ?,"
        " updated_ms = ? WHERE id = ?",
        (since, now_ms + backoff, backoff, error, tx.now_ms, target_id),
    )
    return "paused"


async def deliver_all(
    store: Store,
    client: httpx.AsyncClient | Callable[[], httpx.AsyncClient],
    *,
    now_ms: int,
    secrets: SecretResolver = lambda _ns, _name: None,
) -> DeliveryReport:
    """Leader tick: every target in parallel, each one strictly in seq order.

    ``client`` may be a factory: it is called only when there is a target, so a Hub without
    notification targets never builds an HTTP client (nor loads httpx).
    """
    report = DeliveryReport()
    rows = await store.rows(
        NotifyTargetRow, "SELECT * FROM notify_targets ORDER BY namespace, name"
    )
    if not rows:
        return report
    if callable(client):
        client = client()
    await asyncio.gather(*(deliver_target(store, client, r, now_ms, secrets, report) for r in rows))
    return report
