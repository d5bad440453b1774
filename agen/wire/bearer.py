"""The one parser of an ``Authorization: Bearer <token>`` header, for every door that takes a token
(the Hub's API, its event stream and webhook secrets, the A2A Gateway): here, below both."""

from __future__ import annotations

from collections.abc import Mapping


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (any case), or None."""
    value = headers.get("authorization") or headers.get("Authorization") or ""
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None
