"""Shapes shared by several RPCs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Scope = Literal["viewer", "operator", "approver", "admin"]
SCOPES: tuple[Scope, ...] = ("viewer", "operator", "approver", "admin")
NAME_PATTERN = r"^[a-z][a-z0-9-]{0,62}$"


class Model(BaseModel):
    """Base of every wire model: unknown fields are refused, so typos fail loudly."""

    model_config = ConfigDict(extra="forbid")


class Empty(Model):
    pass


class Ok(Model):
    ok: bool = True
    message: str = ""


class NamespaceRef(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)


class DeploymentRef(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    name: str = Field(min_length=1, max_length=63)
