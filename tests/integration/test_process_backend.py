"""The process backend: each instance is a child `agen host serve`, tied to its Nest, with a memory cap."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agen.api import registry as r
from agen.bundle import load_bundle
from agen.client import Client
from agen.errors import UnavailableError
from agen.nest.process import ProcessExecutor, parse_memory_limit
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle


def tool_bundle(root: Path, work: Path) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    bundle = write_bundle(
        root,
        "stepper",
        script=[
            {
                "toolCalls": [
                    {"name": "ws_run", "arguments": {"command": "echo 1 >> effects.log; sleep 3"}}
                ]
            },
            {"text": "done"},
        ],
        config={"scale": {"min": 1, "max": 1}, "permissions": {"default": "allow"}},
    )
    server = {"command": "agen", "args": ["mcp", "workspace", "--root", str(work)]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"ws": server}}))
    return bundle


async def wait_for(check: object, what: str, timeout_s: float = 30) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_killed_host_is_replaced_and_its_task_resumes_without_repeating_the_effect(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "node.db")
    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1, backend="process")
    await node.start()
    try:
        client = Client.in_process(node.hub)
        work = tmp_path / "work"
        await client.call(
            r.CreateDeployment,
            CreateDeploymentRequest(files=files_b64(tool_bundle(tmp_path / "b", work))),
        )
        task_id = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="stepper", input="go"))
        ).task.id
        await wait_for(lambda: (work / "effects.log").exists(), "the side effect")
        [inst] = node.manager.instances.values()
        pid = inst.executor.proc.pid  # type: ignore[attr-defined]
        assert pid != os.getpid()
        os.kill(pid, signal.SIGKILL)
        task = (await client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=60))).task
        assert task.state == "succeeded" and task.outcome and task.outcome["summary"] == "done"
        assert (
            task.attempts == 1
        )  # the host died after the run checkpointed its turn: not charged to the task
        assert (
            work / "effects.log"
        ).read_text() == "1\n"  # resumed from the checkpoint, effect not repeated
        assert [i.id for i in node.manager.instances.values()] != [inst.id]
        failed = await store.scalar("SELECT exit_reason FROM instances WHERE id = ?", (inst.id,))
        assert failed is not None and "exited" in failed
    finally:
        await node.drain(10)
        await store.close()


async def test_host_memory_limit_is_applied_to_the_child(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "node.db")
    bundle_dir = write_bundle(tmp_path / "b", "echo")
    node = LocalNode(store, backend="process")
    try:
        client = Client.in_process(node.hub)
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle_dir)))
        bundle = load_bundle(bundle_dir)
        limit = parse_memory_limit("3G")
        ex = await ProcessExecutor.start(store.url, bundle, "inst-1", memory_limit=limit)
        try:
            limits = await asyncio.to_thread(Path(f"/proc/{ex.proc.pid}/limits").read_text)
            [line] = [ln for ln in limits.splitlines() if ln.startswith("Max address space")]
            assert line.split()[3] == str(limit)
        finally:
            await ex.close()
        with pytest.raises(UnavailableError, match="exited with code"):
            await ProcessExecutor.start(
                store.url, bundle, "inst-2", memory_limit=parse_memory_limit("20M")
            )
    finally:
        await store.close()


def test_memory_limit_sizes_parse_and_junk_is_refused() -> None:
    assert parse_memory_limit("512M") == 512 << 20 and parse_memory_limit("2GiB") == 2 << 30
    assert parse_memory_limit("0") == 0
    with pytest.raises(Exception, match="512M or 2G"):
        parse_memory_limit("lots")


def test_host_serve_refuses_to_run_without_its_manager() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGEN_HOST_")}
    r = subprocess.run(
        [sys.executable, "-m", "agen", "host", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 2 and "started by a Nest" in r.stderr
    env.update(
        AGEN_HOST_STORE="/nonexistent.db",
        AGEN_HOST_INSTANCE="i",
        AGEN_HOST_DIGEST="sha256:x",
        AGEN_HOST_TOKEN="right",
    )
    r = subprocess.run(
        [sys.executable, "-m", "agen", "host", "serve"],
        env=env,
        input='{"op":"hello","token":"wrong"}\n',
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 2 and "token" in r.stdout


@pytest.mark.parametrize("backend", ["inproc", "process"])
async def test_pausing_a_running_task_suspends_it_after_its_current_step_and_resume_finishes_it(
    tmp_path: Path, backend: str
) -> None:
    from agen.wire.tasks import PauseTaskRequest, ResumeTaskRequest

    store = await SQLiteStore.open(tmp_path / "node.db")
    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1, backend=backend)
    await node.start()
    try:
        client = Client.in_process(node.hub)
        work = tmp_path / "work"
        await client.call(
            r.CreateDeployment,
            CreateDeploymentRequest(files=files_b64(tool_bundle(tmp_path / "b", work))),
        )
        task_id = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="stepper", input="go"))
        ).task.id
        await wait_for(lambda: (work / "effects.log").exists(), "the first step")
        await client.call(r.PauseTask, PauseTaskRequest(id=task_id, reason="look first"))
        for _ in range(200):
            task = (await client.call(r.GetTask, GetTaskRequest(id=task_id))).task
            if task.state == "waiting":
                break
            await asyncio.sleep(0.05)
        assert task.state == "waiting" and task.wait_for == "resume"
        await client.call(r.ResumeTask, ResumeTaskRequest(id=task_id))
        task = (await client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=60))).task
        assert task.state == "succeeded" and (work / "effects.log").read_text() == "1\n"
    finally:
        await node.drain(10)
        await store.close()


@pytest.mark.parametrize("backend", ["inproc", "process"])
async def test_report_progress_reaches_the_task_through_the_nests_hub_port_on_either_backend(
    tmp_path: Path, backend: str
) -> None:
    """A host process has no Hub: its report_progress values go to the Manager over the channel, and
    from there out through the Nest's HubPort (ReportProgress), as an inproc instance's do."""
    store = await SQLiteStore.open(tmp_path / "node.db")
    node = LocalNode(store, tick_s=0.1, heartbeat_s=0.1, backend=backend)
    await node.start()
    try:
        client = Client.in_process(node.hub)
        bundle = write_bundle(
            tmp_path / "b",
            "reporter",
            script=[
                {
                    "toolCalls": [
                        {"name": "report_progress", "arguments": {"note": "halfway", "percent": 50}}
                    ]
                },
                {"text": "done"},
            ],
            config={"scale": {"min": 1, "max": 1}, "permissions": {"allow": ["report_progress"]}},
        )
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        task_id = (
            await client.call(r.SubmitTask, SubmitTaskRequest(deployment="reporter", input="go"))
        ).task.id
        task = (await client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=60))).task
        assert task.state == "succeeded"
        assert (
            task.progress is not None
            and task.progress["note"] == "halfway"
            and task.progress["percent"] == 50
        )
    finally:
        await node.drain(10)
        await store.close()
