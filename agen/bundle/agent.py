"""x-agen/agent.md front matter and x-agen/secrets.json."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agen.bundle._base import AgenModel, SecretName


class AgentFrontMatter(AgenModel):
    """Front matter of x-agen/agent.md (the body is the system prompt; the model is in harness.json)."""

    name: str | None = Field(None, description="the agent's name (default: the bundle name)")
    description: str | None = Field(None, description="what the agent does, in a sentence")
    preload_skills: list[str] = Field(
        [],
        description="skills whose full text is in the context from the start (the others load on demand)",
    )


class SecretSpec(AgenModel):
    """Where a secret's value comes from: the Nest's environment or the platform's sealed store."""

    source: Literal["env", "platform"] = Field(
        "env",
        description="env: read from the environment of the process that runs the instance (`agen up`); platform: handed over by the Hub",
    )
    env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the environment variable to read (default: the secret's own name)",
    )
    description: str | None = Field(
        None,
        description="what the secret is and how to get one; shown by `agen init` and `agen deploy` when it is unset",
    )


class Secrets(AgenModel):
    """x-agen/secrets.json: secret names and sources, never values."""

    secrets: dict[SecretName, SecretSpec] = Field(
        {},
        description="secret names (as ${NAME} in mcp.json and apiKeySecret in harness.json use them) and where their values come from",
    )

    def env_var(self, name: str) -> str:
        """The environment variable an env-sourced secret is read from."""
        spec = self.secrets.get(name)
        return (spec.env if spec and spec.env else None) or name
