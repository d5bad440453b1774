"""Every flag does what it says, against a real Hub over HTTP: -n on commands that take an id, filters
that name nothing, `events --type --limit`, and a repeated idempotency key with --no-wait."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agen.api import registry as r
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.signals import ListEventsRequest
from agen.wire.tasks import SubmitTaskRequest
from tests.cli_helpers import run_agen
from tests.fleet_helpers import files_b64, write_bundle
from tests.observe_helpers import Embedded, embedded_hub, http_hub


async def _scheduled(e: Embedded, namespace: str = "default") -> str:
    """A task that stays queued: it may not start for an hour."""
    req = SubmitTaskRequest(
        namespace=namespace,
        deployment="scribe",
        input="later",
        not_before_ms=int(time.time() * 1000) + 3_600_000,
    )
    return (await e.client.call(r.SubmitTask, req)).task.id


async def test_ids_filters_and_event_limits_mean_what_they_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):

        async def agen(*args: str) -> tuple[int, str, str]:
            return await asyncio.to_thread(run_agen, capsys, *args, "--hub", url, "--token", token)

        await e.deploy("scribe")
        done = [(await e.run("scribe", f"job {i}")).id for i in range(3)]
        bundle = write_bundle(tmp_path / "ops-scribe", "scribe")
        await e.client.call(
            r.CreateDeployment, CreateDeploymentRequest(namespace="ops", files=files_b64(bundle))
        )
        queued = await _scheduled(e)
        ops_task = await _scheduled(e, "ops")

        # events: the filter runs before the limit (the newest events are not task.succeeded ones)
        newest = await e.client.call(r.ListEvents, ListEventsRequest(last=2))
        assert all(ev.type != "task.succeeded" for ev in newest.events)
        code, out, err = await agen("events", "--type", "task.succeeded", "--limit", "2")
        assert code == 0, err
        lines = out.strip().splitlines()
        assert len(lines) == 2 and all("task.succeeded" in ln for ln in lines), out
        assert done[1] in lines[0] and done[2] in lines[1]

        # -n on commands that take an id: another namespace is "not found there", and nothing happens
        for cmd in (
            ["cancel", queued],
            ["pause", queued],
            ["resume", queued],
            ["wait", queued, "--timeout", "1s"],
            ["query", queued],
            ["trace", done[0]],
            ["transcript", done[0]],
        ):
            code, _, err = await agen(*cmd, "-n", "nosuchns")
            assert code == 4, (cmd, err)
            assert "not found in namespace nosuchns (it is in default: pass -n default)" in err, (
                cmd,
                err,
            )
        code, out, _ = await agen("query", queued, "--json")
        assert (
            code == 0 and '"state": "queued"' in out and '"held": false' in out
        )  # not cancelled, not held
        code, _, err = await agen("cancel", ops_task)
        assert code == 4 and "not found in namespace default (it is in ops: pass -n ops)" in err
        code, out, err = await agen("cancel", ops_task, "-n", "ops")
        assert code == 0 and "cancelled" in out, err
        code, out, err = await agen("cancel", queued)
        assert code == 0 and "cancelled" in out, err

        # a deployment or state that does not exist is said so, not an empty list
        for cmd in (["tasks", "nosuch"], ["runs", "nosuch"], ["events", "nosuch"]):
            code, out, err = await agen(*cmd)
            assert code == 4 and "deployment nosuch not found" in err and out == "", (cmd, err)
        code, _, err = await agen("tasks", "--state", "bogus")
        assert code == 2 and "--state 'bogus': use one of queued, leased, running" in err
        code, _, err = await agen("tasks", "scribe", "-n", "ops", "--state", "cancelled")
        assert code == 0, err

        # --no-wait with a key that names an old task says so, with its state
        code, first, err = await agen(
            "run", "scribe", "hello", "--idempotency-key", "k1", "--no-wait"
        )
        assert code == 0 and f"task {first.strip()} queued" in err
        assert (await e.wait(first.strip())).state == "succeeded"
        code, again, err = await agen(
            "run", "scribe", "hello", "--idempotency-key", "k1", "--no-wait"
        )
        assert code == 0 and again == first
        assert err.strip() == (
            f"task {first.strip()} already exists (succeeded); idempotency key k1; "
            f"`agen wait {first.strip()}` prints its result"
        )
