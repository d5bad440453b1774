"""A fenced writer (its lease moved on) is normal operation: one log line that says so, no traceback."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path

import pytest

from agen.api import registry as r
from agen.bundle import Bundle
from agen.client import Client
from agen.errors import FencedError
from agen.nest.executor import ExecResult, Executor
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle


class _FencedExecutor:
    """An executor whose run was taken over by a newer holder: its next write is refused."""

    async def run(self, task: object) -> ExecResult:
        raise FencedError("run r1 now belongs to epoch 2; this writer (epoch 1) was fenced off")

    async def drain(self) -> None:
        return None

    def exit_reason(self) -> str | None:
        return None

    async def close(self) -> None:
        return None


async def _factory(bundle: Bundle, instance_id: str, platform: Mapping[str, str]) -> Executor:
    return _FencedExecutor()


async def test_a_fenced_run_is_logged_as_fencing_in_one_line_not_as_a_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = await SQLiteStore.open(tmp_path / "node.db")
    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1, executor_factory=_factory)
    caplog.set_level(logging.INFO, logger="agen.nest")
    await node.start()
    try:
        client = Client.in_process(node.hub)
        bundle = write_bundle(tmp_path / "b", "echo", config={"scale": {"min": 1, "max": 1}})
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        task = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="echo", input="hi"))
        ).task
        for _ in range(600):
            if any("fenced off" in rec.getMessage() for rec in caplog.records):
                break
            await asyncio.sleep(0.05)
        mine = [rec for rec in caplog.records if task.id in rec.getMessage()]
        fenced = [rec for rec in mine if "fenced off" in rec.getMessage()]
        assert fenced and fenced[0].exc_info is None and "\n" not in fenced[0].getMessage()
        assert not any("failed inside the instance" in rec.getMessage() for rec in mine)
    finally:
        await node.drain(5)
        await store.close()
