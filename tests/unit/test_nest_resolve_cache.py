"""The Nest's side of resolving an agen deployment for A2A (seed 000 §10): the Hub's answer is
kept per caller and callee, so a call still goes out while the Hub is unreachable, until the
token it got expires; another caller's token is never used."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agen.errors import UnavailableError
from agen.nest.delegation import NestDelegation
from agen.wire.delegation import ResolveChildAgentResponse


class FlakyHub:
    def __init__(self) -> None:
        self.up = True
        self.calls = 0

    async def call(self, rpc: Any, request: Any) -> Any:
        self.calls += 1
        if not self.up:
            raise UnavailableError("the Hub at http://hub is not answering")
        return ResolveChildAgentResponse(
            urls=[f"http://gw/a2a/{request.namespace}/{request.deployment}"],
            call_token=f"token-{self.calls}",
            expires_ms=int(time.time() * 1000) + self.ttl_ms,
        )

    ttl_ms = 3_600_000


async def test_a_resolved_agent_is_used_from_the_cache_while_the_hub_is_down() -> None:
    hub = FlakyHub()
    nest = NestDelegation(hub)  # type: ignore[arg-type]
    first = await nest.resolve_agent("t1", "default", "helper", caller="default/boss")
    assert first.call_token == "token-1"
    hub.up = False
    again = await nest.resolve_agent("t2", "default", "helper", caller="default/boss")
    assert again == first
    with pytest.raises(UnavailableError):  # another caller has no token of its own cached
        await nest.resolve_agent("t3", "default", "helper", caller="default/other")


async def test_an_expired_cached_token_is_not_used() -> None:
    hub = FlakyHub()
    hub.ttl_ms = -1
    nest = NestDelegation(hub)  # type: ignore[arg-type]
    await nest.resolve_agent("t1", "default", "helper", caller="default/boss")
    hub.up = False
    with pytest.raises(UnavailableError):
        await nest.resolve_agent("t1", "default", "helper", caller="default/boss")
