"""Platform secrets (``agen secret``): set, list and remove (admin), and the values a Nest receives.

Values go in (SetSecret) and, only to a Nest for a deployment it runs, out (GetPlatformSecrets);
ListSecrets shows names, grants and times, never a value.
"""

from __future__ import annotations

from pydantic import Field

from agen.wire.common import NAME_PATTERN, Model, TimeMs

SECRET_PATTERN = r"^[A-Z][A-Z0-9_]{0,127}$"
MAX_SECRET_BYTES = 64 * 1024


class SetSecretRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    name: str = Field(
        pattern=SECRET_PATTERN, description="the name bundles use (x-agen/secrets.json)"
    )
    value: str = Field(
        min_length=1,
        max_length=MAX_SECRET_BYTES,
        description="the value; stored sealed, never returned",
    )
    grants: list[str] | None = Field(
        None,
        max_length=1000,
        description="deployment names that may read it (replaces the grants); null keeps the current ones",
    )


class SecretRow(Model):
    namespace: str
    name: str
    grants: list[str]
    sealed: bool = Field(description="stored sealed under the Hub's KEK (false: no KEK was set)")
    created_ms: TimeMs
    updated_ms: TimeMs
    updated_by: str | None = None


class SetSecretResponse(Model):
    secret: SecretRow


class ListSecretsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)


class ListSecretsResponse(Model):
    secrets: list[SecretRow]


class DeleteSecretRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    name: str = Field(pattern=SECRET_PATTERN)


class GetPlatformSecretsRequest(Model):
    """A Nest asks for the platform secrets of one deployment it is assigned (or runs instances of)."""

    nest_id: str = Field(min_length=1, max_length=100)
    deployment_id: str = Field(min_length=1, max_length=100)


class GetPlatformSecretsResponse(Model):
    values: dict[str, str] = Field(
        description="name -> value: the deployment's declared platform secrets that are granted to it"
    )
