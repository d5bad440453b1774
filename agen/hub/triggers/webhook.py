"""Webhook triggers: ``POST /hooks/<ns>/<deployment>/<trigger>`` creates a task.

The caller presents the trigger's secret as a bearer token (only its hash is stored, as a
token of kind 'webhook') or signs the raw body (auth.type hmac) with a platform secret granted to
the deployment (sealed in the store, agen.hub.platform_secrets; the Hub's environment as a fallback). Redeliveries with the same
idempotency key return the same task (a timestamped signature is itself the key when the caller
sends none, so a replay inside the tolerance is a duplicate and one outside it is stale).
Rejected calls are aggregated per trigger per minute: one rejected trigger event whose count
grows, and one ``webhook.rejected`` event, so a flood of junk requests cannot fill the Store.
Configuration problems go to the deployment log, never to the caller.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from agen.bundle.agent import Secrets
from agen.bundle.archive import unpack
from agen.bundle.checks import SECRETS
from agen.bundle.triggers import HmacAuth, WebhookTrigger
from agen.domain import DeploymentRef, columns
from agen.errors import InvalidError, NotFoundError
from agen.hub.auth import bearer_token, hash_token, new_secret
from agen.hub.events.deployment_log import write_log
from agen.hub.platform_secrets import granted_value
from agen.hub.queue.redaction import redact_task_input
from agen.hub.sealing import kek_from_env
from agen.hub.triggers.fire import fire, task_input
from agen.hub.triggers.tick import parse_spec
from agen.hub.triggers.verify import (
    MAX_BODY_BYTES,
    check_bearer,
    check_hmac,
    check_timestamped,
)
from agen.otel.ids import header_traceparent
from agen.store import Tx, new_ulid

SecretResolver = Callable[[str, str], str | None]


def env_secrets(namespace: str, variable: str) -> str | None:
    """Default lookup for a local Hub: ``variable`` in the Hub process's environment."""
    return os.environ.get(variable)


_SECRETS_OF: dict[str, Secrets] = {}
"""x-agen/secrets.json of each definition read so far (a definition never changes: its id is its digest)."""


def _declared(tx: Tx, definition_id: str) -> Secrets:
    """The secrets a deployed definition declares, read from its stored files once per process."""
    found = _SECRETS_OF.get(definition_id)
    if found is None:
        blob = tx.scalar("SELECT files FROM definitions WHERE id = ?", (definition_id,))
        files = unpack(bytes(blob)) if blob else {}
        raw = files.get(SECRETS)
        found = Secrets() if raw is None else Secrets.model_validate_json(raw)
        if len(_SECRETS_OF) >= 256:
            _SECRETS_OF.clear()
        _SECRETS_OF[definition_id] = found
    return found


def _hmac_key(tx: Tx, dep: DeploymentRef, name: str, fallback: SecretResolver) -> str | None:
    """The HMAC key: the platform secret granted to the deployment (sealed in the store), else the
    resolver given the environment variable the bundle's x-agen/secrets.json names for it (its
    ``env``, else the secret's own name: ``Secrets.env_var``, as the runner reads every env secret).
    A value that does not open with this Hub's KEK is logged on the deployment and counts as not set."""
    try:
        value = granted_value(tx, dep.namespace, dep.name, name, kek_from_env())
    except InvalidError as e:
        write_log(tx, dep.namespace, dep.name, f"webhook: {e}", level="error")
        return None
    if value is not None:
        return value
    return fallback(dep.namespace, _declared(tx, dep.definition_id).env_var(name))


def _find(tx: Tx, namespace: str, deployment: str, trigger: str) -> tuple[DeploymentRef, str]:
    """The deployment and its webhook trigger's stored spec (camelCase JSON text)."""
    dep = tx.row(
        DeploymentRef,
        f"SELECT {columns(DeploymentRef)} FROM deployments WHERE namespace = ? AND name = ?",
        (namespace, deployment),
    )
    spec = (
        None
        if dep is None
        else tx.scalar(
            "SELECT spec FROM triggers WHERE deployment_id = ? AND name = ? AND type = 'webhook'",
            (dep.id, trigger),
        )
    )
    if dep is None or spec is None:
        raise NotFoundError(
            f"no webhook trigger {trigger!r} on deployment {namespace}/{deployment}",
            namespace=namespace,
            deployment=deployment,
            trigger=trigger,
        )
    return dep, str(spec)


def create_webhook_secret(tx: Tx, namespace: str, deployment: str, trigger: str) -> str:
    """CreateWebhookSecret: a new secret for the trigger (older ones are revoked); shown once."""
    dep, _ = _find(tx, namespace, deployment, trigger)
    subject = f"{dep.id}/{trigger}"
    tx.execute(
        "UPDATE tokens SET revoked_ms = ? WHERE kind = 'webhook' AND subject = ? AND revoked_ms IS NULL",
        (tx.now_ms, subject),
    )
    secret = new_secret()
    tx.execute(
        "INSERT INTO tokens (id, name, kind, hash, scopes, namespaces, trust, subject, created_ms)"
        " VALUES (?,?,?,?,?,?,?,?,?)",
        (
            new_ulid(),
            f"webhook {deployment}/{trigger}",
            "webhook",
            hash_token(secret),
            "[]",
            json.dumps([namespace]),
            "untrusted",
            subject,
            tx.now_ms,
        ),
    )
    return secret


@dataclass
class WebhookResult:
    """What the caller is told: HTTP status and a small JSON body."""

    status: int
    body: dict[str, Any]


REJECT_WINDOW_MS = 60_000
"""Rejections of one trigger within one clock minute share a trigger event row and a webhook.rejected event."""


def _rejected_this_minute(tx: Tx, dep: DeploymentRef, trigger: str, now_ms: int) -> bool:
    """Whether this trigger already rejected a call this minute (its configuration error is logged once)."""
    return (
        tx.scalar(
            "SELECT 1 FROM trigger_events WHERE deployment_id = ? AND trigger_name = ? AND status = 'rejected'"
            " AND created_ms >= ? LIMIT 1",
            (dep.id, trigger, now_ms - now_ms % REJECT_WINDOW_MS),
        )
        is not None
    )


class _Rejected(NamedTuple):
    """A trigger's rejected minute: how many calls it counted (``count`` as ``calls``: a tuple has a
    ``count`` method), and when it began."""

    calls: int
    created_ms: int


def _reject(
    tx: Tx, dep: DeploymentRef, trigger: str, status: int, reason: str, public: str, now_ms: int
) -> WebhookResult:
    window = now_ms - now_ms % REJECT_WINDOW_MS
    counted = tx.execute(
        "UPDATE trigger_events SET count = count + 1, reason = ? WHERE id = (SELECT id FROM trigger_events"
        " WHERE deployment_id = ? AND trigger_name = ? AND status = 'rejected' AND created_ms >= ?"
        " ORDER BY created_ms DESC LIMIT 1)",
        (reason, dep.id, trigger, window),
    )
    if not counted:  # the first rejection of this trigger this minute: a row and one event
        tx.execute(
            "INSERT INTO trigger_events (id, namespace, deployment_id, trigger_name, status, reason, created_ms)"
            " VALUES (?,?,?,?,'rejected',?,?)",
            (new_ulid(), dep.namespace, dep.id, trigger, reason, now_ms),
        )
        # The event also carries the final count of the trigger's previous rejected minute, which
        # got only one event however many calls it counted.
        earlier = tx.row(
            _Rejected,
            "SELECT count AS calls, created_ms FROM trigger_events WHERE deployment_id = ? AND trigger_name = ?"
            " AND status = 'rejected' AND created_ms < ? ORDER BY created_ms DESC LIMIT 1",
            (dep.id, trigger, window),
        )
        tx.event(
            dep.namespace,
            "webhook.rejected",
            severity="warning",
            deployment=dep.name,
            data={
                "trigger": trigger,
                "reason": reason,
                "status": status,
                "window_ms": REJECT_WINDOW_MS,
                "previous": None
                if earlier is None
                else {"count": earlier.calls, "at_ms": earlier.created_ms},
            },
        )
    return WebhookResult(status, {"error": {"code": "rejected", "message": public}})


class _TokenHash(NamedTuple):
    hash: str


def _idempotency(spec: WebhookTrigger, headers: Mapping[str, str], payload: Any) -> str | None:
    lower = {k.lower(): v for k, v in headers.items()}
    if spec.idempotency_header and lower.get(spec.idempotency_header.lower()):
        return lower[spec.idempotency_header.lower()]
    if spec.idempotency_field and isinstance(payload, dict):
        value: Any = payload
        for part in spec.idempotency_field.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            return str(value)
    return lower.get("idempotency-key") or None


def receive(
    tx: Tx,
    namespace: str,
    deployment: str,
    trigger: str,
    headers: Mapping[str, str],
    body: bytes,
    secrets: SecretResolver = env_secrets,
    now_ms: int | None = None,
) -> WebhookResult:
    """Verify one call and queue its task (or return the task an earlier delivery queued).

    ``now_ms`` is the Hub's clock (the transaction's time when not given): it windows rejections and
    checks a timestamped signature.
    """
    now = tx.now_ms if now_ms is None else now_ms
    signed_key: str | None = None
    try:
        dep, stored = _find(tx, namespace, deployment, trigger)
    except NotFoundError as e:
        return WebhookResult(404, e.to_dict())
    spec = parse_spec(stored)
    assert isinstance(spec, WebhookTrigger)
    if len(body) > MAX_BODY_BYTES:
        return _reject(
            tx,
            dep,
            trigger,
            413,
            f"body of {len(body)} bytes is over the 1 MiB limit",
            "the body is over the 1 MiB limit",
            now,
        )
    if isinstance(spec.auth, HmacAuth):
        key = _hmac_key(tx, dep, spec.auth.secret, secrets)
        if key is None:
            if not _rejected_this_minute(tx, dep, trigger, now):
                write_log(
                    tx,
                    namespace,
                    deployment,
                    f"webhook {trigger}: HMAC secret {spec.auth.secret} is not set; every call is rejected",
                    level="error",
                )
            return _reject(
                tx,
                dep,
                trigger,
                401,
                f"secret {spec.auth.secret} is not configured",
                "the call could not be verified",
                now,
            )
        if spec.auth.scheme == "timestamped":
            verdict = check_timestamped(spec.auth, headers, body, key, now)
            if verdict.stale:
                return _reject(
                    tx,
                    dep,
                    trigger,
                    401,
                    verdict.problem or "stale",
                    "the signature timestamp is outside the tolerance; sign each delivery when it is sent",
                    now,
                )
            if verdict.problem is not None:
                return _reject(
                    tx, dep, trigger, 401, verdict.problem, "the call could not be verified", now
                )
            signed_key = f"sig:{verdict.signature}"
        else:
            problem = check_hmac(spec.auth, headers, body, key)
            if problem is not None:
                return _reject(
                    tx, dep, trigger, 401, problem, "the call could not be verified", now
                )
    else:
        hashes = [
            r.hash
            for r in tx.rows(
                _TokenHash,
                "SELECT hash FROM tokens WHERE kind = 'webhook' AND subject = ? AND revoked_ms IS NULL",
                (f"{dep.id}/{trigger}",),
            )
        ]
        if not hashes and not _rejected_this_minute(tx, dep, trigger, now):
            write_log(
                tx,
                namespace,
                deployment,
                f"webhook {trigger}: no secret yet; create one with `agen webhook-secret {deployment} {trigger}`",
                level="error",
            )
        if not check_bearer(bearer_token(headers), hashes):
            return _reject(
                tx,
                dep,
                trigger,
                401,
                "missing or wrong bearer secret",
                "the call could not be verified",
                now,
            )
    text = body.decode("utf-8", errors="replace")
    try:
        payload: Any = json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        payload = None
    key = _idempotency(spec, headers, payload) or signed_key or new_ulid()
    conversation = None
    if spec.conversation_key:
        conversation = spec.conversation_key
        if isinstance(payload, dict) and spec.conversation_key.startswith("$."):
            value: Any = payload
            for part in spec.conversation_key[2:].split("."):
                value = value.get(part) if isinstance(value, dict) else None
            conversation = None if value is None else str(value)
    result = fire(
        tx,
        dep,
        trigger,
        kind="webhook",
        key=key,
        input=redact_task_input(tx, dep, task_input(spec.input, text or None)),
        labels=spec.labels,
        conversation_key=conversation,
        trust=spec.trust or "untrusted",
        traceparent=header_traceparent(headers),
    )
    if result.status == "skipped":
        return WebhookResult(429, {"error": {"code": "rate_limited", "message": result.reason}})
    return WebhookResult(
        200 if result.status == "duplicate" else 202,
        {"task_id": result.task_id, "duplicate": result.status == "duplicate"},
    )
