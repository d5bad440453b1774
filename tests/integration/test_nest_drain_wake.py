"""Draining a Nest whose instances sit idle returns at once, not after their idle wait."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agen.api import registry as r
from agen.client import Client
from agen.hub.auth import LOCAL_NEST
from agen.hub.service import Hub
from agen.nest.client_port import ClientHubPort
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest
from tests.fleet_helpers import files_b64, write_bundle


class IdleWatchingPort(ClientHubPort):
    """The real in-process port, except that an idle wait never ends by itself (only a wake-up can end the
    lease loop), and the test hears when an instance starts one."""

    def __init__(self, hub: Hub) -> None:
        super().__init__(Client.in_process(hub, LOCAL_NEST))
        self.idling = asyncio.Event()

    async def wait_for_work(self, seen: int, timeout_s: float) -> int:
        if timeout_s > 0:
            self.idling.set()
            await asyncio.Event().wait()
        return await super().wait_for_work(seen, timeout_s)


async def test_draining_an_idle_instance_wakes_its_lease_loop(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "node.db")
    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1)
    port = node.manager.port = IdleWatchingPort(node.hub)
    await node.start()
    try:
        bundle = write_bundle(tmp_path / "b", "echo", config={"scale": {"min": 1, "max": 1}})
        await Client.in_process(node.hub).call(
            r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle))
        )
        await asyncio.wait_for(port.idling.wait(), timeout=60)
        inst = next(iter(node.manager.instances.values()))
        await asyncio.wait_for(node.drain(), timeout=60)
        assert inst.done and inst.state == "stopped"
    finally:
        await store.close()
