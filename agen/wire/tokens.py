"""Identity RPC shapes: API tokens and whoami, rotating the Hub's call-token key; the admin-only
shutdown used by ``agen down``."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

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
    deployment: str | None = Field(
        None, description="an on-behalf token's deployment (namespace/name): whose tasks it names"
    )
    revoked_ms: int | None = None


class CreateTokenRequest(Model):
    model_config = ConfigDict(
        json_schema_extra={  # the Hub's rule, stated where clients and fuzzers read it
            "if": {"properties": {"on_behalf": {"const": True}}, "required": ["on_behalf"]},
            "then": {"required": ["deployment"], "properties": {"deployment": {"type": "string"}}},
            "else": {"properties": {"deployment": {"type": "null"}}},
        }
    )

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
    deployment: str | None = Field(
        None,
        pattern=r"^([a-z][a-z0-9-]{0,62}/)?[a-z][a-z0-9-]{0,62}$",
        description="required with on_behalf: the agent's deployment ([namespace/]name, namespace "
        "default), the only one whose running tasks (X-Agen-Task) the token may name",
    )


class CreateTokenResponse(Model):
    token: str
    info: TokenInfo


class ListTokensRequest(Model):
    include_revoked: bool = Field(False, description="list revoked tokens too")


class ListTokensResponse(Model):
    tokens: list[TokenInfo] = Field(
        description="API tokens, oldest first (Nest credentials and join tokens: `agen nests`)"
    )


class RevokeTokenRequest(Model):
    id: str = Field(min_length=1, max_length=64, description="the token's id (`agen token ls`)")


class WhoAmIResponse(Model):
    info: TokenInfo
    local: bool = False


class CallTokenKey(Model):
    """One of the Hub's call-token keys (seed 000 §10) and its state now: ``next`` (published, not
    signing yet), ``current`` (signing), ``previous`` (still verifying live tokens), ``retired``
    (kept, accepted for no call)."""

    id: str = Field(description="the key id tokens name (kid)")
    state: Literal["next", "current", "previous", "retired"]
    created_ms: int


class RotateTokenKeyRequest(Model):
    force: bool = Field(
        False,
        description="rotate even though the newest key is younger than an agent token's lifetime "
        "plus twice the grace: tokens of the key this retires are refused at once",
    )


class RotateTokenKeyResponse(Model):
    added: str = Field(description="the new key's id")
    retired: str | None = Field(None, description="the key this rotation retired, if any")
    signs_from_ms: int = Field(description="when Hubs start signing with the new key")
    keys: list[CallTokenKey]
    message: str
