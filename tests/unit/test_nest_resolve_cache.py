"""The Nest's side of resolving an agen deployment for A2A (seed 000 §10): the Hub's answer is
kept per caller and callee, so a call still goes out while the Hub is unreachable, until the
token it got expires, then fails saying so; another caller's token is never used. ``agen nest
run`` keeps them in its data dir (0600), for a Manager started again during the outage."""

from __future__ import annotations

import json
import time
from pathlib import Path
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


class Clock:
    def __init__(self) -> None:
        self.now = int(time.time() * 1000)

    def __call__(self) -> int:
        return self.now


async def test_held_tokens_are_kept_0600_and_a_restarted_manager_calls_with_them_until_expiry(
    tmp_path: Path,
) -> None:
    saved = tmp_path / "nests" / "n1" / "resolved.json"
    hub, clock = FlakyHub(), Clock()
    first = NestDelegation(hub, saved=saved, clock=clock)  # type: ignore[arg-type]
    got = await first.resolve_agent("t1", "default", "helper", caller="default/boss")
    assert saved.stat().st_mode & 0o777 == 0o600
    assert json.loads(saved.read_text())["resolved"][0]["call_token"] == got.call_token
    hub.up = False  # the Hub goes away, and the Manager starts again
    again = NestDelegation(hub, saved=saved, clock=clock)  # type: ignore[arg-type]
    assert await again.resolve_agent("t2", "default", "helper", caller="default/boss") == got
    clock.now = got.expires_ms + 5 * 60_000
    with pytest.raises(UnavailableError) as failed:
        await again.resolve_agent("t2", "default", "helper", caller="default/boss")
    message = failed.value.message
    assert "cannot call default/helper by name now: the Hub does not answer" in message
    assert "expired 5 min ago" in message and "once the Hub answers" in message
    with pytest.raises(UnavailableError, match="holds no call token for it"):
        await again.resolve_agent("t2", "default", "other", caller="default/boss")
    # An expired token is not read back from the file either.
    later = NestDelegation(hub, saved=saved, clock=clock)  # type: ignore[arg-type]
    with pytest.raises(UnavailableError, match="holds no call token for it"):
        await later.resolve_agent("t3", "default", "helper", caller="default/boss")


async def test_an_unreadable_saved_file_is_ignored_and_replaced_once_the_hub_answers(
    tmp_path: Path,
) -> None:
    saved = tmp_path / "resolved.json"
    saved.write_text("not json")
    hub = FlakyHub()
    nest = NestDelegation(hub, saved=saved)  # type: ignore[arg-type]
    got = await nest.resolve_agent("t1", "default", "helper", caller="default/boss")
    assert json.loads(saved.read_text())["resolved"][0]["call_token"] == got.call_token
