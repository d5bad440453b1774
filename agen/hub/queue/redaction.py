"""Task input redaction at the Hub: a secret typed into a task is masked before the task row is stored.

The Runner masks the run's input and first message with the deployment's full redactor when it
opens the run (``agen.runner.loop``). The task row is written earlier, by the Hub, which knows the
values it can resolve itself: the deployment's declared secrets from the Hub's environment (an env
secret by its variable, a platform secret by its name, as webhook HMAC secrets are resolved), and the
platform secrets granted to it from the store. With ``agen up`` that is the same environment the local
Nest's runs use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from pydantic import ValidationError

from agen.bundle.agent import Secrets
from agen.domain import DeploymentRef, DeploymentRow
from agen.domain.redact import Redactor
from agen.hub.definitions import unpack
from agen.store import Tx

SECRETS_FILE = "x-agen/secrets.json"
_declared: dict[str, Secrets] = {}
"""Declared secrets by definition id: definitions are content-addressed, so an entry never goes stale."""


def _secrets_of(tx: Tx, definition_id: str) -> Secrets:
    cached = _declared.get(definition_id)
    if cached is not None:
        return cached
    files = tx.scalar("SELECT files FROM definitions WHERE id = ?", (definition_id,))
    secrets = Secrets()
    if files:
        raw = unpack(bytes(files)).get(SECRETS_FILE)
        if raw is not None:
            try:
                secrets = Secrets.model_validate(json.loads(raw))
            except (ValueError, ValidationError):
                secrets = (
                    Secrets()
                )  # a stored definition was validated at deploy; nothing to mask otherwise
    if len(_declared) > 256:
        _declared.clear()
    _declared[definition_id] = secrets
    return secrets


def hub_redactor(secrets: Secrets, environ: Mapping[str, str] | None = None) -> Redactor:
    """A redactor holding every declared secret value the Hub can resolve."""
    env = os.environ if environ is None else environ
    red = Redactor()
    for name, spec in secrets.secrets.items():
        red.add(env.get(name if spec.source == "platform" else secrets.env_var(name)))
    return red


def redact_task_input(tx: Tx, deployment: DeploymentRow | DeploymentRef, text: str) -> str:
    """``text`` with the deployment's resolvable secret values masked as [REDACTED]."""
    secrets = _secrets_of(tx, deployment.definition_id)
    if not secrets.secrets or not text:
        return text
    red = hub_redactor(secrets)
    _add_platform_values(tx, deployment, secrets, red)
    return red.redact(text)


def _add_platform_values(
    tx: Tx, deployment: DeploymentRow | DeploymentRef, secrets: Secrets, red: Redactor
) -> None:
    """The platform secrets granted to the deployment, opened from the store (agen secret set)."""
    names = [n for n, spec in secrets.secrets.items() if spec.source == "platform"]
    if not names:
        return
    from agen.errors import InvalidError
    from agen.hub.platform_secrets import granted_value
    from agen.hub.sealing import kek_from_env

    try:
        kek = kek_from_env()
        for name in names:
            red.add(granted_value(tx, deployment.namespace, deployment.name, name, kek))
    except InvalidError:
        return  # a value this Hub cannot open: the instance's start reports it
