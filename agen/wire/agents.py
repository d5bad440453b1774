"""ResolveAgent: what a caller needs to reach a deployment over A2A (seed 000 §6 "Addressing").

The Gateway builds the agent card from it, and ``agen resolve`` prints it: the Gateway URLs that
serve the deployment, its name, description and skills (from the bundle), and whether it is paused.
"""

from __future__ import annotations

from pydantic import Field

from agen.wire.common import NAME_PATTERN, Model


class AgentSkillInfo(Model):
    """One skill of the bundle (skills/<name>/SKILL.md)."""

    id: str
    name: str
    description: str = ""


class ResolveAgentRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    deployment: str = Field(min_length=1, max_length=63)


class ResolveAgentResponse(Model):
    namespace: str
    deployment: str
    name: str = Field(description="the agent's name (agent.md's name, else the bundle's)")
    description: str = ""
    version: str = Field("", description="the bundle digest the deployment runs")
    skills: list[AgentSkillInfo] = []
    urls: list[str] = Field(
        [], description="A2A endpoints (/a2a/<ns>/<deployment>) of the Gateways that serve it"
    )
    paused: bool = False
    pause_reason: str | None = None
    ready: int = Field(0, description="instances ready now (0: a call wakes it)")
    call_token: str | None = Field(
        None,
        description="a call token for this deployment (10 min), for a caller with the operator scope",
    )
    call_token_expires_ms: int | None = None
