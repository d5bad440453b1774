"""A graceful cancel's or an interrupt's wrap-up on the real stack (LocalNode: Hub, leader, Nest,
Runner, SQLite, a local OpenAI-compatible server): the run gets one last turn, ends cancelled with
its wrap-up summary, and an interrupting submission runs next."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.testing.openai_server import OpenAIServer, Reply
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest, Task
from tests.fleet_helpers import files_b64, write_bundle


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[LocalNode]:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    node = LocalNode(store, tick_s=0.05, heartbeat_s=0.05, capacity=4)
    await node.start()
    try:
        yield node
    finally:
        await node.drain(5)
        await store.close()


async def _wait(client: Client, task_id: str) -> Task:
    while True:
        t = (await client.call(r.GetTask, GetTaskRequest(id=task_id, wait_seconds=5))).task
        if t.state in ("succeeded", "failed", "cancelled", "expired"):
            return t


async def _held_answer(srv: OpenAIServer) -> None:
    """Until the run's first model call is waiting at the server (its gate is closed)."""
    while srv.in_flight < 1:  # noqa: ASYNC110 - the server thread counts; it has no event
        await asyncio.sleep(0.01)


def _progress() -> dict[str, Any]:
    return {"name": "report_progress", "arguments": {"note": "working"}}


async def test_an_interrupt_ends_the_running_task_cancelled_after_one_turn_and_runs_the_new_one(
    node: LocalNode, tmp_path: Path
) -> None:
    client = Client.in_process(node.hub)
    async with OpenAIServer() as srv:
        srv.script(
            Reply(text=None, tool_calls=[_progress()]),  # the first task's turn in flight
            Reply(  # its last turn: a progress note beside finish, and nothing after it
                text=None,
                tool_calls=[
                    _progress(),
                    {"name": "finish", "arguments": {"summary": "half done; the rest is left"}},
                ],
            ),
            *[Reply(text=None, tool_calls=[_progress()]) for _ in range(3)],
        )
        bundle = write_bundle(
            tmp_path / "w",
            "w",
            config={"kind": "pool", "permissions": {"allow": ["report_progress"]}},
        )
        harness = {"provider": "openai", "model": "m", "baseUrl": srv.base_url}
        (bundle / "x-agen/harness.json").write_text(json.dumps(harness))
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        srv.gate.clear()
        first = await client.call(
            r.SubmitTask, SubmitTaskRequest(deployment="w", input="long job", conversation_key="c")
        )
        await _held_answer(srv)
        second = await client.call(
            r.SubmitTask,
            SubmitTaskRequest(
                deployment="w", input="do this instead", conversation_key="c", delivery="interrupt"
            ),
        )
        assert second.task.id != first.task.id
        srv.gate.set()
        ended = await _wait(client, first.task.id)
        then = await _wait(client, second.task.id)
    assert ended.state == "cancelled" and ended.outcome is not None
    assert ended.outcome["status"] == "cancelled" and ended.outcome["reason"] == "interrupted"
    assert ended.outcome["summary"] == "half done; the rest is left"
    turns = await node.store.scalar(
        "SELECT COUNT(*) FROM messages m JOIN runs r ON r.id = m.run_id"
        " WHERE r.task_id = ? AND m.role = 'assistant'",
        (first.task.id,),
    )
    assert turns == 2  # the turn in flight, then exactly one last turn
    assert then.state == "succeeded"
