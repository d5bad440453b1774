"""Shapes shared by several RPCs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

Scope = Literal["viewer", "operator", "approver", "admin"]
"""The scopes a token can be created with; ``nest`` comes only from enrolling a Nest (EnrolNest)."""
NAME_PATTERN = r"^[a-z][a-z0-9-]{0,62}$"

# Bounded numbers for request fields: a value past 64 bits is a 400 naming the field, never an
# OverflowError from SQLite; StrictInt keeps ``true``/``"5"``/``1.5`` from passing as a number.
INT64_MAX = 2**63 - 1
Count = Annotated[StrictInt, Field(ge=0, le=INT64_MAX)]
"""A cursor or sequence number (event seq, log seq, transcript seq)."""
TimeMs = Annotated[StrictInt, Field(ge=0, le=INT64_MAX)]
"""A moment in milliseconds since the epoch (UTC)."""
DurationMs = Annotated[StrictInt, Field(ge=1, le=100 * 365 * 86_400_000)]
"""A span of time in milliseconds: at least 1 ms, at most 100 years."""
Replicas = Annotated[StrictInt, Field(ge=0, le=10_000)]
"""Desired instances of one deployment."""


class Model(BaseModel):
    """Base of every wire model: unknown fields are refused, so typos fail loudly.

    Validators are built on a model's first use (``defer_build``): a one-shot command touches a
    handful of the API's models, and building all of them at import cost it a tenth of a second.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)


class Empty(Model):
    pass


class Ok(Model):
    ok: bool = True
    message: str = ""


class DeploymentByName(Model):
    """A request that names one deployment: its namespace and name (agen.domain.DeploymentRef is
    the other thing, a row of the deployments table)."""

    namespace: str = Field("default", pattern=NAME_PATTERN)
    name: str = Field(min_length=1, max_length=63)
