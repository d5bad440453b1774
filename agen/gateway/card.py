"""A deployment's agent card (A2A 1.0): name, description and skills from its bundle, the bearer
auth scheme every call needs, streaming, and the JSON-RPC endpoint (seed 000 §6)."""

from __future__ import annotations

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from agen.wire.agents import ResolveAgentResponse

A2A_VERSION = "1.0"  # what the card advertises; the v0.3 method names are served too
BEARER = "bearer"


def agent_card(info: ResolveAgentResponse, endpoint: str) -> AgentCard:
    card = AgentCard(
        name=info.name,
        description=info.description or f"agen deployment {info.namespace}/{info.deployment}",
        version=info.version or "0",
        supported_interfaces=[
            AgentInterface(url=endpoint, protocol_binding="JSONRPC", protocol_version=A2A_VERSION)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(id=s.id, name=s.name, description=s.description or s.name, tags=["agen"])
            for s in info.skills
        ],
    )
    card.security_schemes[BEARER].CopyFrom(
        SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="Bearer",
                description="a call token for this agent (`agen resolve`) or an agen API token "
                "with the operator scope (`agen token create`)",
            )
        )
    )
    card.security_requirements.append(SecurityRequirement(schemes={BEARER: StringList()}))
    return card
