"""GetDeployment / ListDeployments carry each cron and random trigger's next_due_at and last_due_at."""

from __future__ import annotations

import time
from pathlib import Path

from agen.api import registry as r
from agen.client import Client
from agen.hub.leadership import HUB_LEADER, acquire_or_renew
from agen.hub.service import Hub
from agen.hub.triggers.tick import fire_due_triggers
from agen.store import SQLiteStore
from agen.wire.deployments import (
    CreateDeploymentRequest,
    GetDeploymentRequest,
    ListDeploymentsRequest,
)
from tests.fleet_helpers import files_b64, write_bundle

HOUR = 3_600_000


async def test_deployment_responses_show_when_each_scheduled_trigger_fires_next_and_last(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    try:
        client = Client.in_process(Hub(store))
        triggers = [
            {"name": "hourly", "type": "cron", "schedule": "@hourly", "input": "tick"},
            {"name": "sometimes", "type": "random", "count": 3, "window": "00:00-23:59"},
            {"name": "hook", "type": "webhook"},
        ]
        bundle = write_bundle(
            tmp_path / "b", "sched", config={"kind": "pool", "triggers": triggers}
        )
        before = int(time.time() * 1000)
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        dep = (await client.call(r.GetDeployment, GetDeploymentRequest(name="sched"))).deployment
        assert dep is not None
        assert [(t.name, t.type) for t in dep.triggers] == [
            ("hourly", "cron"),
            ("sometimes", "random"),
        ]
        hourly = dep.triggers[0]
        assert hourly.last_due_at is None and hourly.next_due_at is not None
        assert before < hourly.next_due_at <= before + HOUR and hourly.next_due_at % HOUR == 0
        assert dep.triggers[1].next_due_at is not None and dep.triggers[1].next_due_at > before

        due = hourly.next_due_at
        assert due is not None
        epoch = await store.write(lambda tx: acquire_or_renew(tx, HUB_LEADER, "hub-a", 60_000))
        assert epoch is not None
        await store.write(lambda tx: fire_due_triggers(tx, leader_epoch=epoch, now_ms=due + 1000))
        [listed] = (await client.call(r.ListDeployments, ListDeploymentsRequest())).deployments
        assert listed.triggers[0].last_due_at == due
        assert listed.triggers[0].next_due_at == due + HOUR
    finally:
        await store.close()


async def test_a_redeploy_without_triggers_removes_the_ones_it_had(tmp_path: Path) -> None:
    """Deploying skips the trigger machinery for a bundle with none, but not for one that had some."""
    store = await SQLiteStore.open(tmp_path / "hub.db")
    try:
        client = Client.in_process(Hub(store))
        hourly = [{"name": "hourly", "type": "cron", "schedule": "@hourly", "input": "tick"}]
        with_one = write_bundle(tmp_path / "b1", "sched", config={"triggers": hourly})
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(with_one)))
        assert [t["name"] for t in await store.all("SELECT name FROM triggers")] == ["hourly"]

        without = write_bundle(tmp_path / "b2", "sched", config={})
        await client.call(r.UpdateDeployment, CreateDeploymentRequest(files=files_b64(without)))
        dep = (await client.call(r.GetDeployment, GetDeploymentRequest(name="sched"))).deployment
        assert dep is not None and dep.triggers == []
        assert await store.all("SELECT * FROM triggers") == []
    finally:
        await store.close()
