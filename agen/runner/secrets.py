"""Bundle secrets: resolve declared names to values, register every value with the redactor.

x-agen/secrets.json names secrets and where they come from (``env``, or ``platform``
when a Hub hands values to its Nest). Values never live in the bundle; ``${NAME}`` in
mcp.json env/headers (and provider key settings) expands to them at start.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from agen.bundle.agent import Secrets
from agen.errors import InvalidError, UnavailableError
from agen.runner.redact import Redactor

_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass
class ResolvedSecrets:
    """Secret values by name, plus why each unresolved one is missing (reported when used)."""

    values: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    declared: frozenset[str] = frozenset()

    def get(self, name: str, *, where: str) -> str:
        """The value of ``name``; a clear error naming the secret and its use when there is none."""
        if name in self.values:
            return self.values[name]
        if name in self.missing:
            reason = self.missing[name]
            cls = UnavailableError if "platform" in reason else InvalidError
            raise cls(f"{reason}; it is used by {where}", secret=name, where=where)
        raise InvalidError(
            f"{where} refers to secret ${{{name}}}, which x-agen/secrets.json does not declare; "
            f'add it there, e.g. {{"secrets": {{"{name}": {{"source": "env"}}}}}}',
            secret=name,
            where=where,
        )

    def expand(self, text: str, *, where: str) -> str:
        """Replace every ``${NAME}`` in ``text`` (``${WORKSPACE}`` is left for the workspace step)."""

        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name == "WORKSPACE" and name not in self.declared:
                return m.group(0)
            return self.get(name, where=where)

        return _REF.sub(sub, text)

    def expand_map(self, values: Mapping[str, str], *, where: str) -> dict[str, str]:
        return {k: self.expand(v, where=f"{where}.{k}") for k, v in values.items()}


def env_secret(
    secrets: Secrets,
    name: str,
    redactor: Redactor | None,
    *,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """The value of secret ``name`` from agen's environment (its declared ``env`` variable, else
    ``name``), registered with ``redactor``: the one place a secret value is read, for MCP servers
    (through resolve_secrets) and provider API keys alike. None when the variable is not set."""
    value = (os.environ if environ is None else environ).get(secrets.env_var(name))
    if value and redactor is not None:
        redactor.add(value)
    return value


def resolve_secrets(
    secrets: Secrets,
    redactor: Redactor,
    *,
    environ: Mapping[str, str] | None = None,
    platform: Mapping[str, str] | None = None,
    deployment: str | None = None,
) -> ResolvedSecrets:
    """Look up every declared secret and register each value found with ``redactor``.

    ``platform`` holds values a Manager received from the Hub (only the granted ones); without it,
    platform secrets stay missing and fail clearly when something needs them. ``deployment`` names
    the deployment in the message that says how to grant a missing one.
    """
    env = os.environ if environ is None else environ
    out = ResolvedSecrets(declared=frozenset(secrets.secrets))
    for name, spec in secrets.secrets.items():
        if spec.source == "platform":
            if platform is not None and name in platform:
                out.values[name] = platform[name]
            elif platform is not None:  # run by a Hub's Nest, which gave no value for it
                out.missing[name] = (
                    f"platform secret {name} is not set or not granted to this deployment: "
                    f"`agen secret set {name} --for {deployment or 'DEPLOYMENT'}` (value on stdin)"
                )
            else:
                out.missing[name] = (
                    f"secret {name} has source platform, and platform secrets need a Hub: "
                    "run the bundle with `agen deploy` (the Hub passes its value), set it with "
                    f"`agen secret set {name}`, or change its source to env in x-agen/secrets.json"
                )
            continue
        value = env_secret(secrets, name, None, environ=env)
        if value:
            out.values[name] = value
        else:
            out.missing[name] = (
                f"secret {name} is not set: its source is the environment variable {secrets.env_var(name)}, "
                f"which is {'empty' if value == '' else 'not set'} in agen's environment"
            )
    for value in out.values.values():
        redactor.add(value)
    return out
