"""A deployed bundle's placement.labels decide which Nests its instances go to (seed 000 §3-§4)."""

from __future__ import annotations

from pathlib import Path

from agen.api import registry as r
from agen.client import Client
from agen.hub.service import Hub
from agen.wire.deployments import CreateDeploymentRequest, GetDeploymentRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.unit.queue_helpers import add_nest
from tests.unit.test_scheduler_tick import assignments, lead, tick


async def test_a_deployed_bundle_runs_only_on_nests_carrying_its_placement_labels(
    hub: Hub, tmp_path: Path
) -> None:
    bundle = write_bundle(
        tmp_path / "gpu",
        "gpu",
        config={
            "kind": "pool",
            "scale": {"min": 2, "max": 2},
            "placement": {"labels": {"gpu": "yes"}},
        },
    )
    client = Client.in_process(hub)
    await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
    dep = (await client.call(r.GetDeployment, GetDeploymentRequest(name="gpu"))).deployment
    assert dep is not None
    assert dep.placement == {"labels": {"gpu": "yes"}}

    store = hub.store
    cpu = await store.write(lambda tx: add_nest(tx, "cpu", capacity=8))
    gpu = await store.write(lambda tx: add_nest(tx, "gpu", capacity=8, labels={"gpu": "yes"}))
    await tick(store, await lead(store))
    placed = await store.read(assignments)
    assert placed == {(dep.id, gpu): 2} and all(n != cpu for _, n in placed)
