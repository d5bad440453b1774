"""x-agen/agent.md front matter and x-agen/secrets.json."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agen.bundle._base import AgenModel, SecretName


class AgentFrontMatter(AgenModel):
    """Front matter of x-agen/agent.md (the body is the system prompt; the model is in harness.json)."""

    name: str | None = None
    description: str | None = None
    preload_skills: list[str] = []


class SecretSpec(AgenModel):
    """Where a secret's value comes from: the Nest's environment or the platform's sealed store."""

    source: Literal["env", "platform"] = "env"
    env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    description: str | None = None


class Secrets(AgenModel):
    """x-agen/secrets.json: secret names and sources, never values."""

    secrets: dict[SecretName, SecretSpec] = {}

    def env_var(self, name: str) -> str:
        """The environment variable an env-sourced secret is read from."""
        spec = self.secrets.get(name)
        return (spec.env if spec and spec.env else None) or name
