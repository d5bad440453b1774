"""The Manager hands an instance its deployment's platform secrets from the Hub, asks only for bundles
that declare one, and keeps them in memory so an instance replaced while the Hub is away still starts."""

from __future__ import annotations

import asyncio
import json

from agen.nest.manager import BACKOFF_BASE_MS, Manager
from agen.testing.fake_hub_port import FakeHubPort
from tests.unit.nest_helpers import Factory

DECLARED = json.dumps({"secrets": {"API_TOKEN": {"source": "platform"}}}).encode()


def manager(port: FakeHubPort, factory: Factory, now: list[int]) -> Manager:
    return Manager(port, executor_factory=factory, name="n1", clock=lambda: now[0])


async def test_an_instance_starts_with_its_platform_secrets_and_a_replacement_keeps_them_while_the_hub_is_away() -> (
    None
):
    port, factory, now = FakeHubPort(), Factory(), [1_000_000]
    a = port.deploy(count=1)
    port.files[a.definition_id]["x-agen/secrets.json"] = DECLARED
    port.secrets[a.deployment_id] = {"API_TOKEN": "v1"}
    m = manager(port, factory, now)
    await m.start()
    await m.tick()
    assert factory.platform_secrets == {"API_TOKEN": "v1"}
    [call] = port.calls_of("platform_secrets")
    assert call.args == {"nest_id": m.nest_id, "deployment_id": a.deployment_id}

    port.unreachable = True
    factory.executors[0].dead = "its MCP server exited"
    factory.platform_secrets = {}
    for _ in range(500):  # reaped once its loop ends, then replaced after the back-off
        await m.tick()
        if factory.attempts == 2:
            break
        now[0] += BACKOFF_BASE_MS
        await asyncio.sleep(0.01)
    assert factory.attempts == 2 and factory.platform_secrets == {"API_TOKEN": "v1"}
    assert len(port.calls_of("platform_secrets")) == 2  # asked, unreachable, used what it kept
    port.unreachable = False
    await m.drain(5)


async def test_a_bundle_without_platform_secrets_starts_without_asking_the_hub() -> None:
    port, factory, now = FakeHubPort(), Factory(), [1_000_000]
    port.deploy(count=1)
    m = manager(port, factory, now)
    await m.start()
    await m.tick()
    assert factory.attempts == 1 and factory.platform_secrets == {}
    assert port.calls_of("platform_secrets") == []
    await m.drain(5)
