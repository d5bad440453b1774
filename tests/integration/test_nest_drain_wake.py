"""Draining a Nest whose instances sit idle returns at once, not after their idle wait."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agen.api import registry as r
from agen.api.models.deployments import CreateDeploymentRequest
from agen.client import Client
from agen.hub.service import Hub
from agen.nest import instance
from agen.nest.inproc import InProcessHubPort
from agen.node import LocalNode
from agen.store import SQLiteStore
from tests.fleet_helpers import files_b64, write_bundle


class IdleWatchingPort(InProcessHubPort):
    """The real in-process port; it also tells the test when an instance starts its idle wait."""

    def __init__(self, hub: Hub) -> None:
        super().__init__(hub)
        self.idling = asyncio.Event()

    async def wait_for_work(self, seen: int, timeout_s: float) -> int:
        if timeout_s > 0:
            self.idling.set()
        return await super().wait_for_work(seen, timeout_s)


async def test_draining_an_idle_instance_wakes_its_lease_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an idle wait far beyond the test's deadline: only the drain's wake-up can end the lease loop in time
    monkeypatch.setattr(instance, "IDLE_WAIT_S", 3600.0)
    store = await SQLiteStore.open(tmp_path / "node.db")
    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1)
    port = node.manager.port = IdleWatchingPort(node.hub)
    await node.start()
    try:
        bundle = write_bundle(tmp_path / "b", "echo", config={"scale": {"min": 1, "max": 1}})
        await Client.in_process(node.hub).call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        await asyncio.wait_for(port.idling.wait(), timeout=60)
        inst = next(iter(node.manager.instances.values()))
        await asyncio.wait_for(node.drain(), timeout=60)
        assert inst.done and inst.state == "stopped"
    finally:
        await store.close()
