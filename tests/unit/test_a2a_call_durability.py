"""An A2A call_agent is a side effect (seed 000 §6/§7, effect ledger): the remote task's id is
recorded as soon as it is known, and a run resumed after a crash mid-call polls that task for its
answer instead of sending the message again. Also: the A2A path needs
no Hub, so a standalone run (no task, no Nest) can call an A2A agent."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from agen.errors import FencedError
from agen.hub.queue import submit_task
from agen.hub.queue.lease import cancel_task
from agen.runner.effects import started_note
from agen.runner.types import RunRequest
from tests.a2a_server import a2a_server
from tests.runner_helpers import call, make, open_store, runner, script
from tests.unit.queue_helpers import add_deployment, new_task


async def _noted_task(store: Any) -> str | None:
    """The remote task id the interrupted call recorded in the effect ledger, once it has."""
    rows = await store.all("SELECT state, result FROM effects WHERE tool = 'call_agent'")
    note = started_note(rows[0]["result"]) if rows and rows[0]["state"] == "started" else None
    return str(note["a2a_task_id"]) if note else None


async def test_a_run_resumed_mid_a2a_call_polls_the_recorded_remote_task_and_never_sends_again(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    dep = await store.write(lambda tx: add_deployment(tx))
    task, _ = await store.write(lambda tx: submit_task(tx, new_task(dep, "go")))
    with a2a_server() as (url, seen):
        b = make(
            script(call("call_agent", agent="remote", input="wait"), {"text": "handled"}),
            config={"delegates": [{"name": "remote", "url": url}]},
        )
        old = runner(store, b, owner="host-a")
        first = asyncio.create_task(
            old.run(RunRequest(input="go", task_id=task.id, deployment="d"))
        )
        await asyncio.to_thread(seen.hanging.wait, 60)  # the call is out; its host is then lost
        remote_task = None
        for _ in range(2_000):  # the ledger records the remote task as soon as send answers
            remote_task = await _noted_task(store)
            if remote_task is not None:
                break
            await asyncio.sleep(0.01)
        assert remote_task is not None
        # host-a is lost mid-call (its effect stays started); host-b takes the task over.
        new = runner(store, b, owner="host-b")
        resumed = asyncio.create_task(
            new.run(RunRequest(input="go", task_id=task.id, deployment="d", attempt=2))
        )
        seen.release.set()  # the remote agent finishes the task it already had
        res = await resumed
        assert res.resumed and res.status == "succeeded"
        assert len(seen.requests) == 1  # one message/send: the resumed run polled the task
        assert seen.cancelled == []
        with pytest.raises((FencedError, asyncio.CancelledError)):
            first.cancel()
            await first
    [result] = await store.all(
        "SELECT content, is_error FROM messages WHERE run_id = ? AND role = 'tool'", (res.run_id,)
    )
    assert (result["content"], result["is_error"]) == ("remote says: wait", 0)
    assert await store.scalar("SELECT effect_unknown FROM runs WHERE id = ?", (res.run_id,)) == 0
    await store.close()


async def test_a_task_cancelled_before_its_run_records_the_remote_task_still_cancels_that_task(
    tmp_path: Path,
) -> None:
    """The Hub cancelling a task ends its run and fences the run's owner off (epoch bumped) before
    its hint stops the run. Landing while message/send's answer is on the way, the ledger's write of
    the remote task's id is refused (fenced): the call ends there, and the remote task it created
    is cancelled, not left working (the intermittent lost cancel, here made certain)."""
    store = await open_store(tmp_path)
    dep = await store.write(lambda tx: add_deployment(tx))
    task, _ = await store.write(lambda tx: submit_task(tx, new_task(dep, "go")))
    with a2a_server() as (url, seen):
        b = make(
            script(call("call_agent", agent="remote", input="hang"), {"text": "never"}),
            config={"delegates": [{"name": "remote", "url": f"{url}/held"}]},
        )
        running = asyncio.create_task(
            runner(store, b, owner="host-a").run(
                RunRequest(input="go", task_id=task.id, deployment="d")
            )
        )
        await asyncio.to_thread(seen.hanging.wait, 60)  # the remote task exists; its id is held
        await store.write(lambda tx: cancel_task(tx, task.id, by="test"))
        seen.answer.set()
        with contextlib.suppress(FencedError):  # the run's next write after the call is refused too
            await running
        [created] = [r["task_id"] for r in seen.requests]
        assert seen.cancelled == [created], "the remote task was not told to cancel"
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
