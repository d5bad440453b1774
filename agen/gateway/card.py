"""A deployment's agent card (A2A 1.0): name, description and skills from its bundle, the bearer
auth scheme every call needs, streaming, and the JSON-RPC endpoint (seed 000 §6).

The endpoint answers the 1.0 and the v0.3 method names, so the card lists it for both versions, and
its JSON (``card_json``) carries the v0.3 fields beside the 1.0 ones (``url``, ``protocolVersion``,
``preferredTransport``, ``security``): a2a-sdk 0.3 clients require ``url`` to resolve a card."""

from __future__ import annotations

from typing import Any

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

from agen.domain.attachments import IMAGE_TYPES, PDF, TEXT_TYPES
from agen.wire.agents import ResolveAgentResponse

A2A_VERSION = "1.0"  # what the card advertises first
A2A_LEGACY_VERSION = "0.3"  # the v0.3 method names, served at the same endpoint
BEARER = "bearer"


INPUT_FILES = [*IMAGE_TYPES, PDF, *(t for t in TEXT_TYPES if t != "text/plain")]


def agent_card(info: ResolveAgentResponse, endpoint: str) -> AgentCard:
    card = AgentCard(
        name=info.name,
        description=info.description or f"agen deployment {info.namespace}/{info.deployment}",
        version=info.version or "0",
        supported_interfaces=[
            AgentInterface(url=endpoint, protocol_binding="JSONRPC", protocol_version=version)
            for version in (A2A_VERSION, A2A_LEGACY_VERSION)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        # files come as raw parts (a file's bytes) and data parts (JSON): agen.domain.attachments
        default_input_modes=["text/plain", *INPUT_FILES],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(id=s.id, name=s.name, description=s.description or s.name, tags=["agen"])
            for s in info.skills
        ]
        # A card names at least one skill (A2A 1.0 §5.7): a bundle without skills does one thing,
        # what its description says.
        or [
            AgentSkill(
                id=info.deployment,
                name=info.name,
                description=info.description or f"agen deployment {info.deployment}",
                tags=["agen"],
            )
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


def card_json(info: ResolveAgentResponse, endpoint: str) -> dict[str, Any]:
    """The card as served: its A2A 1.0 JSON with the v0.3 fields merged in (a2a-sdk's own
    ``agent_card_to_dict``, which its servers use for the same purpose)."""
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict

    return agent_card_to_dict(agent_card(info, endpoint))
