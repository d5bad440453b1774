"""Who is calling: every A2A call is authenticated here, in one place (seed 000 §10).

A caller presents one of two bearers (``Authorization: Bearer …``):

* a Hub-signed **call token** (``agen-ct1.…``): an operator's from ``agen resolve`` (10 min) or an
  agent instance's from its Nest (1 h). It names the caller and the one deployment it may call,
  and is verified here offline with the Hub's public keys (GetTokenKeys, cached, fetched again
  every minute and when a token names a key not held; a Nest keeps them on disk). A token for
  another deployment is refused (403), an expired or badly signed one too (401), each saying why;
* an **API token** with the operator scope: the Hub says who it is (WhoAmI).

Either way the Gateway then reaches the Hub with the caller's own bearer, so the Hub (which signed
the call token, and keeps the API tokens) is the authority on what the call may do. No anonymous
calls.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agen.api import registry as r
from agen.calltokens import (
    CallIdentity,
    UnknownKeyError,
    is_call_token,
    keys_by_id,
    token_key_id,
    verify_call_token,
)
from agen.client import Client
from agen.errors import AgenError, DeniedError, UnauthenticatedError, UnavailableError
from agen.util.home import write_private
from agen.wire.bearer import bearer_token
from agen.wire.common import Empty

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

log = logging.getLogger("agen.gateway")
CALL_SCOPES = frozenset({"operator", "admin"})
READ_SCOPES = CALL_SCOPES | {"viewer", "approver"}
REFETCH_S = 10.0  # an unknown key id fetches the Hub's keys again at most this often
REREAD_S = 60.0  # and they are fetched again when this old (seed 000 §10: every minute)

KeyFetch = Callable[[], Awaitable[list[str]]]
"""The Hub's public call-token keys (GetTokenKeys: raw Ed25519 keys, base64)."""


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


class KeyRing:
    """The Hub's public keys by id, fetched on first use and cached.

    They are fetched again when the copy is ``reread_s`` old (the Hub's keys change on rotation:
    seed 000 §10) and when a token names a key not held (a fresh rotation, a restarted Hub on a
    new store), at most once per ``refetch_s``, so a flood of made-up key ids cannot make every
    call reach the Hub. With ``saved`` (a Nest's data dir) the keys are also kept in that file
    (0600) and read from it at start, so a Gateway restarted while the Hub is away still checks
    tokens offline; a fetch that finds the Hub unreachable keeps the keys held.
    """

    def __init__(
        self,
        fetch: KeyFetch | None,
        *,
        refetch_s: float = REFETCH_S,
        reread_s: float = REREAD_S,
        saved: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._fetch = fetch
        self._refetch_s = refetch_s
        self._reread_s = reread_s
        self._saved = saved
        self._clock = clock
        self._now_ms = now_ms
        self._raw: list[str] = _read_saved(saved) if saved is not None else []
        self._keys: dict[str, Ed25519PublicKey] = keys_by_id(self._raw)
        self._fetched_at: float | None = None  # the last fetch that got an answer
        self._tried_at: float | None = None  # the last fetch, answered or not
        self._unreachable: UnavailableError | None = None  # why the last fetch got no answer
        self._lock = asyncio.Lock()
        self.fetches = 0

    async def refresh(self, *, at_most_every_s: float = 0.0) -> bool:
        """Fetch the keys again, unless that was tried within ``at_most_every_s``; whether they
        were. A Hub that does not answer leaves the keys held (none held: UnavailableError)."""
        if self._fetch is None:
            return False
        async with self._lock:
            now = self._clock()
            if self._tried_at is not None and now - self._tried_at < at_most_every_s:
                return False
            self._tried_at = now
            try:
                raw = await self._fetch()
            except UnavailableError as e:
                if self._unreachable is None:
                    held = f"{len(self._keys)} key(s) held" if self._keys else "no keys held"
                    log.warning(
                        "A2A Gateway: cannot fetch the Hub's call-token keys (%s); %s", e, held
                    )
                self._unreachable = e
                if not self._keys:
                    raise
                return False
            self._unreachable = None
            self._fetched_at = now
            self.fetches += 1
            if raw != self._raw:
                self._keys = keys_by_id(raw)
                self._raw = list(raw)
                if self._saved is not None:
                    self._save()
            return True

    def _save(self) -> None:
        assert self._saved is not None
        try:
            write_private(self._saved, json.dumps({"keys": self._raw}) + "\n")
        except OSError as e:  # the Gateway verifies from memory; only a restart needed the file
            log.warning("A2A Gateway: cannot keep the Hub's keys in %s (%s)", self._saved, e)

    async def verify(self, token: str) -> CallIdentity:
        if self._fetch is None:
            raise UnauthenticatedError(
                "call token refused: this Gateway has no way to fetch the Hub's keys; call it with "
                "an API token (`agen token create --scope operator`)"
            )
        if self._fetched_at is None or self._clock() - self._fetched_at >= self._reread_s:
            await self.refresh(at_most_every_s=self._refetch_s)
        try:
            return verify_call_token(token, self._keys, self._now_ms())
        except UnknownKeyError as e:
            if not await self.refresh(at_most_every_s=self._refetch_s):
                if self._unreachable is not None:  # it may be a new key: not the caller's fault
                    raise UnavailableError(
                        f"cannot check this call token now: it names key {token_key_id(token)}, "
                        "which this Gateway does not hold, and the Hub does not answer to say "
                        f"whether it is one of its keys ({self._unreachable}); retry later"
                    ) from None
                raise e from None
            return verify_call_token(token, self._keys, self._now_ms())

    async def keep_fresh(self) -> None:
        """Fetch the keys every ``reread_s`` for as long as the Gateway runs (cancel to stop), so
        a saved copy is never older than that when the Hub goes away."""
        while True:
            await asyncio.sleep(self._reread_s)
            try:
                await self.refresh()
            except UnavailableError:
                pass  # logged by refresh; the next round tries again
            except AgenError as e:  # e.g. a revoked Nest, which stops on its own: say so, go on
                log.warning("A2A Gateway: cannot fetch the Hub's call-token keys: %s", e)


def _read_saved(path: Path) -> list[str]:
    """The keys a Nest saved (``token_keys.json``); none when there is no such file yet. A file
    that cannot be read is reported and ignored: the keys are fetched from the Hub again."""
    try:
        data = json.loads(path.read_text())
        raw = [str(k) for k in data["keys"]]
        keys_by_id(raw)
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("A2A Gateway: ignoring %s (%s); the keys are fetched from the Hub", path, e)
        return []
    return raw


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: ``id`` scopes its conversations and tasks (``a2a:<id>:…``);
    ``call`` is what its call token says (None for an API token)."""

    id: str
    token: str
    scopes: frozenset[str]
    call: CallIdentity | None = None

    @property
    def is_agent(self) -> bool:
        """An agent instance's call token: the only caller whose lineage metadata is honoured."""
        return self.call is not None and self.call.is_agent


async def authenticate(
    link: HubLink,
    headers: Mapping[str, str],
    *,
    need: str,
    target: tuple[str, str],
    keys: KeyRing,
) -> Caller:
    """The caller behind this request's credential, allowed ``need`` (``call`` or ``read``) on the
    ``target`` deployment (namespace, name).

    Raises UnauthenticatedError (401) without a credential that verifies, DeniedError (403) for a
    call token of another deployment or an API token without the scope.
    """
    token = bearer_token(headers)
    if token is None:
        raise UnauthenticatedError(
            "A2A calls need a bearer token (Authorization: Bearer <token>): a call token from "
            "`agen resolve`, or an API token from `agen token create --scope operator`"
        )
    if is_call_token(token):
        who = await keys.verify(token)
        if not who.allows(*target):
            raise DeniedError(
                f"call token refused: it is for {who.callee}, not {target[0]}/{target[1]}; "
                f"resolve {target[0]}/{target[1]} for a token of its own"
            )
        return Caller(id=who.caller, token=token, scopes=frozenset(), call=who)
    async with link.client(token) as client:
        who_am_i = await client.call(r.WhoAmI, Empty())  # unknown token: UnauthenticatedError
    scopes = frozenset(who_am_i.info.scopes)
    caller = Caller(id=f"user:{who_am_i.info.id}", token=token, scopes=scopes)
    allowed = CALL_SCOPES if need == "call" else READ_SCOPES
    if not scopes & allowed:
        have = ", ".join(sorted(scopes)) or "none"
        raise DeniedError(
            f"this token ({have}) may not {'call' if need == 'call' else 'read'} agents over A2A; "
            f"it needs {' or '.join(sorted(allowed))}"
        )
    return caller
