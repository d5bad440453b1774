"""`agen run --dry-run`: says whether a task would be admitted and which stage refuses it, queues nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.hub.service import Hub
from agen.store import open_store
from agen.wire.deployments import CreateDeploymentRequest, PauseDeploymentRequest
from agen.wire.tasks import SubmitTaskRequest
from tests.cli_helpers import run_agen
from tests.fleet_helpers import files_b64, write_bundle


def local_deployment(root: Path, *, queued: int, paused: bool = False) -> None:
    """A deployment in the local store (no Hub running) allowing one queued task, with ``queued`` queued."""

    async def go() -> None:
        store = await open_store(None)
        try:
            client = Client.in_process(Hub(store))
            bundle = write_bundle(
                root, "capped", config={"kind": "pool", "admission": {"maxQueuedTasks": 1}}
            )
            await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
            for i in range(queued):
                await client.call(
                    r.SubmitTask, SubmitTaskRequest(deployment="capped", input=f"t{i}")
                )
            if paused:
                await client.call(r.PauseDeployment, PauseDeploymentRequest(name="capped"))
        finally:
            await store.close()

    asyncio.run(go())


async def queued_count() -> int:
    store = await open_store(None)
    try:
        return int(await store.scalar("SELECT COUNT(*) FROM tasks"))
    finally:
        await store.close()


def test_dry_run_of_an_admissible_task_exits_0_and_queues_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local_deployment(tmp_path / "b", queued=0)
    code, out, err = run_agen(capsys, "run", "capped", "hello", "--dry-run")
    assert code == 0
    assert out == "admitted: capped would queue this task now\n"
    assert "queue_full: ok" in err and "budget: ok" in err
    assert asyncio.run(queued_count()) == 0


def test_dry_run_names_the_refusing_stage_and_exits_7(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local_deployment(tmp_path / "b", queued=1)
    code, out, _ = run_agen(capsys, "run", "capped", "hello", "--dry-run")
    assert code == 7
    assert out.startswith(
        "refused at stage queue_full: 1 tasks queued, maxQueuedTasks is 1 (retry after 5s)"
    )
    code, out, _ = run_agen(capsys, "run", "capped", "hello", "--dry-run", "--json")
    assert code == 7
    verdict = json.loads(out)
    assert verdict["admitted"] is False and verdict["stage"] == "queue_full"
    assert {c["stage"]: c["ok"] for c in verdict["checks"]} == {
        "paused": True,
        "budget": True,
        "queue_full": False,
    }
    assert asyncio.run(queued_count()) == 1


def test_dry_run_of_an_unknown_deployment_exits_4(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_agen(capsys, "run", "nope", "hello", "--dry-run")
    assert code == 4 and "nope" in err


def test_dry_run_of_a_paused_deployment_exits_3_as_the_submission_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Paused is not an admission limit: the same exit as a submission refused so (unavailable)."""
    local_deployment(tmp_path / "b", queued=0, paused=True)
    code, out, _ = run_agen(capsys, "run", "capped", "hello", "--dry-run")
    assert code == 3 and out.startswith("refused at stage paused:"), out
    code, _, err = run_agen(capsys, "run", "capped", "hello")
    assert code == 3 and "stage paused" in err, err
