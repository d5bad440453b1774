"""Identity RPC shapes: API tokens and whoami; the admin-only shutdown used by ``agen down``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agen.wire.common import DurationMs, Model, Scope


class TokenInfo(Model):
    id: str
    name: str | None = None
    kind: str = "api"
    scopes: list[str]
    namespaces: list[str] = []
    trust: str = "trusted"
    created_ms: int = 0
    expires_ms: int | None = None
    on_behalf: bool = False


class CreateTokenRequest(Model):
    scopes: list[Scope] = Field(min_length=1)
    namespaces: list[str] = []
    name: str | None = None
    ttl_ms: DurationMs | None = None
    trust: Literal["operator", "trusted", "untrusted"] = "trusted"
    on_behalf: bool = Field(
        False,
        description="for an agent that works for people: each call names a running task (X-Agen-Task) "
        "and is made as its submitter, with the scopes both hold",
    )


class CreateTokenResponse(Model):
    token: str
    info: TokenInfo


class WhoAmIResponse(Model):
    info: TokenInfo
    local: bool = False
