"""Who is calling: every A2A call is authenticated here, in one place (seed 000 §10).

Today a caller presents an API token (``Authorization: Bearer …``) with the operator scope; the
Hub says who it is (WhoAmI). Hub-signed call tokens (agent callers) are to be checked here too.
No anonymous calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from agen.api import registry as r
from agen.client import Client
from agen.errors import DeniedError, UnauthenticatedError
from agen.wire.bearer import bearer_token
from agen.wire.common import Empty

CALL_SCOPES = frozenset({"operator", "admin"})
READ_SCOPES = CALL_SCOPES | {"viewer", "approver"}


class HubLink(Protocol):
    """How the Gateway reaches the Hub as one caller: a client carrying that caller's token."""

    def client(self, token: str) -> Client: ...


@dataclass(frozen=True)
class HttpHubLink:
    """The Hub's HTTP API (``agen up``'s own, or a remote Hub's); the caller's token on each call."""

    url: str
    ca_hash: str | None = None

    def client(self, token: str) -> Client:
        return Client.http(self.url, token, ca_hash=self.ca_hash)


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: ``id`` scopes its conversations and tasks (``a2a:<id>:…``)."""

    id: str
    token: str
    scopes: frozenset[str]

    @property
    def may_call(self) -> bool:
        return bool(self.scopes & CALL_SCOPES)


async def authenticate(link: HubLink, headers: Mapping[str, str], *, need: str) -> Caller:
    """The caller behind this request's credential, holding ``need`` (``call`` or ``read``).

    Raises UnauthenticatedError without a credential the Hub accepts, DeniedError without the scope.
    """
    token = bearer_token(headers)
    if token is None:
        raise UnauthenticatedError(
            "A2A calls need a bearer token (Authorization: Bearer <token>); make one with "
            "`agen token create --scope operator`"
        )
    async with link.client(token) as client:
        who = await client.call(r.WhoAmI, Empty())  # an unknown token: UnauthenticatedError (401)
    scopes = frozenset(who.info.scopes)
    caller = Caller(id=f"user:{who.info.id}", token=token, scopes=scopes)
    allowed = CALL_SCOPES if need == "call" else READ_SCOPES
    if not scopes & allowed:
        have = ", ".join(sorted(scopes)) or "none"
        raise DeniedError(
            f"this token ({have}) may not {'call' if need == 'call' else 'read'} agents over A2A; "
            f"it needs {' or '.join(sorted(allowed))}"
        )
    return caller
