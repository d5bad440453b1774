"""An A2A call_agent is a side effect (seed 000 §6, effect ledger): a run resumed after a crash
mid-call reports effect_unknown instead of sending the message again. Also: the A2A path needs
no Hub, so a standalone run (no task, no Nest) can call an A2A agent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agen.errors import FencedError
from agen.hub.queue import submit_task
from agen.runner.types import RunRequest
from tests.a2a_server import a2a_server
from tests.runner_helpers import call, make, open_store, runner, script
from tests.unit.queue_helpers import add_deployment, new_task


async def test_a_run_resumed_mid_a2a_call_reports_effect_unknown_and_does_not_call_again(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    dep = await store.write(lambda tx: add_deployment(tx))
    task, _ = await store.write(lambda tx: submit_task(tx, new_task(dep, "go")))
    with a2a_server() as (url, seen):
        b = make(
            script(call("call_agent", agent="remote", input="hang"), {"text": "handled"}),
            config={"delegates": [{"name": "remote", "url": url}]},
        )
        old = runner(store, b, owner="host-a")
        first = asyncio.create_task(
            old.run(RunRequest(input="go", task_id=task.id, deployment="d"))
        )
        await asyncio.to_thread(seen.hanging.wait, 60)  # the call is out; its host is then lost
        assert seen.hanging.is_set()
        new = runner(store, b, owner="host-b")
        res = await new.run(RunRequest(input="go", task_id=task.id, deployment="d", attempt=2))
        assert res.resumed and res.status == "succeeded"
        assert len(seen.requests) == 1  # not sent twice
        with pytest.raises((FencedError, asyncio.CancelledError)):
            first.cancel()
            await first
    [result] = await store.all(
        "SELECT content, is_error FROM messages WHERE run_id = ? AND role = 'tool'", (res.run_id,)
    )
    assert result["is_error"]
    assert str(result["content"]).startswith("effect_unknown: this call to call_agent")
    assert await store.scalar("SELECT effect_unknown FROM runs WHERE id = ?", (res.run_id,)) == 1
    await store.close()


async def test_a_standalone_run_calls_an_a2a_agent_without_a_hub(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    with a2a_server() as (url, seen):
        b = make(
            script(call("call_agent", agent="remote", input="hello"), {"text": "ok"}),
            config={"delegates": [{"name": "remote", "url": url}]},
        )
        res = await runner(store, b).run(RunRequest(input="go"))
    assert res.status == "succeeded"
    [result] = await store.all(
        "SELECT content, is_error FROM messages WHERE run_id = ? AND role = 'tool'", (res.run_id,)
    )
    assert (result["content"], result["is_error"]) == ("remote says: hello", 0)
    assert seen.auth == [None] * len(seen.auth)  # no call token outside a Nest: no bearer
    await store.close()
