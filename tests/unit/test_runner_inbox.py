"""The task's inbox drained into a running run before each model call: a signal, a graceful cancel's
wrap-up request and a steer each reach the model as a user message, claimed with the checkpoint."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from agen.errors import FencedError
from agen.hub.queue.holds import write_inbox
from agen.runner.types import RunRequest
from agen.store import SQLiteStore, Store, Tx
from tests.runner_helpers import FnTool, call, capturing_runner, make, open_store, script
from tests.unit.queue_helpers import add_deployment, new_task


async def _task(store: Store) -> str:
    from agen.hub import queue as q

    dep = await store.write(lambda tx: add_deployment(tx))
    row, _ = await store.write(lambda tx: q.submit_task(tx, new_task(dep, "work")))
    return row.id


def _user_texts(request: Any) -> list[str]:
    return [str(m.get("content")) for m in request.messages if m.get("role") == "user"]


async def test_a_signal_reaches_the_model_as_a_user_message_and_is_claimed(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    task_id = await _task(store)
    await store.write(
        lambda tx: write_inbox(tx, task_id, "signal", "parent-1", {"message": "focus on 2025"})
    )
    r, cap = await capturing_runner(store, make())  # echo model: repeats the last user message
    res = await r.run(RunRequest(input="summarise the sales", task_id=task_id))
    assert _user_texts(cap.requests[0])[-1] == "[Signal from task parent-1] focus on 2025"
    assert res.outcome.summary == "You said: [Signal from task parent-1] focus on 2025"
    stored = await store.all(
        "SELECT content FROM messages WHERE run_id = ? AND role = 'user' ORDER BY seq",
        (res.run_id,),
    )
    assert [m["content"] for m in stored] == [
        "summarise the sales",
        "[Signal from task parent-1] focus on 2025",
    ]
    assert await store.scalar("SELECT consumed_ms FROM run_inbox WHERE task_id = ?", (task_id,))
    await store.close()


def _cancel_during_step(store: Store, task_id: str, payload: dict[str, Any]) -> FnTool:
    """A side-effecting step; during the first one a wrap-up request arrives (CancelTask mode
    graceful, or a submission with delivery interrupt, writes this row)."""

    async def step(args: dict[str, Any]) -> str:
        if len(sent.calls) == 1:
            await store.write(lambda tx: write_inbox(tx, task_id, "cancel", "me", payload))
        return "step done"

    sent = FnTool("work.step", step, side_effect=True)
    return sent


async def test_a_graceful_cancel_gives_one_last_turn_refuses_its_side_effects_and_ends_cancelled(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    task_id = await _task(store)
    tool = _cancel_during_step(store, task_id, {"reason": "user asked", "grace_s": 20})
    b = make(
        script(
            call("work_step"),
            {  # the last turn: one more step beside finish, then more turns it never gets
                "tool_calls": [
                    {"name": "work_step", "arguments": {}},
                    {"name": "finish", "arguments": {"summary": "1 of 3 steps done"}},
                ]
            },
            call("work_step"),
            call("work_step"),
        )
    )
    r, cap = await capturing_runner(store, b, tool)
    res = await r.run(RunRequest(input="do three steps", task_id=task_id))
    assert res.status == "cancelled"
    assert res.outcome.status == "cancelled" and res.outcome.reason == "cancelled"
    assert res.outcome.summary == "1 of 3 steps done"  # the wrap-up summary is kept
    assert len(cap.requests) == 2 and len(tool.calls) == 1  # one turn more, no effect more
    wrap_up = _user_texts(cap.requests[1])[-1]
    assert wrap_up.startswith("[Cancel requested: user asked]") and "call finish now" in wrap_up
    assert "within 20 seconds" in wrap_up and "last turn" in wrap_up
    refused = await store.all(
        "SELECT content, is_error FROM messages WHERE run_id = ? AND role = 'tool'"
        " AND name = 'work_step' ORDER BY seq",
        (res.run_id,),
    )
    assert [m["is_error"] for m in refused] == [0, 1]
    assert refused[1]["content"].startswith("refused: this task is being stopped (cancelled)")
    await store.close()


async def test_an_interrupted_run_that_ignores_the_wrap_up_still_ends_after_one_turn(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    task_id = await _task(store)
    payload = {"reason": "interrupted by a new submission", "grace_s": 5, "interrupt": True}
    tool = _cancel_during_step(store, task_id, payload)
    b = make(script(call("work_step"), *[{"text": "still working", **call("work_step")}] * 5))
    r, cap = await capturing_runner(store, b, tool)
    res = await r.run(RunRequest(input="do many steps", task_id=task_id))
    assert res.status == "cancelled" and res.outcome.reason == "interrupted"
    assert res.outcome.summary == "still working"  # what the model said in its last turn
    assert len(cap.requests) == 2 and len(tool.calls) == 1
    await store.close()


async def test_a_run_resumed_after_it_was_stopped_in_its_last_turn_still_ends_after_one_turn(
    tmp_path: Path,
) -> None:
    """The host died during the last turn (here: its runner is left hanging in a call and another
    owner claims the run): the resumed run is still wrapping up, so it gets one turn and ends
    cancelled instead of working on through the rest of its script."""
    store = await open_store(tmp_path)
    task_id = await _task(store)
    tool = _cancel_during_step(store, task_id, {"reason": "user asked", "grace_s": 20})
    inside = asyncio.Event()

    async def hang(args: dict[str, Any]) -> str:
        inside.set()
        await asyncio.sleep(60)
        return "never"

    turns = script(
        call("work_step"),
        call("look"),  # the last turn: a call without side effects, cut off by the "crash"
        call("work_step"),
        call("work_step"),
        call("finish", summary="all steps done"),
    )
    old, _ = await capturing_runner(store, make(turns), tool, FnTool("look", hang))
    stuck = asyncio.create_task(old.run(RunRequest(input="do steps", task_id=task_id)))
    await asyncio.wait_for(inside.wait(), 30)
    new, cap = await capturing_runner(store, make(turns), tool, FnTool("look", _ok), owner="b")
    res = await new.run(RunRequest(input="do steps", task_id=task_id, attempt=2))
    stuck.cancel()
    with contextlib.suppress(asyncio.CancelledError, FencedError):  # the old owner is fenced off
        await stuck
    assert res.resumed and res.status == "cancelled" and res.outcome.reason == "cancelled"
    assert len(cap.requests) == 1 and len(tool.calls) == 1  # one turn, no step after the cancel
    await store.close()


async def test_a_steer_becomes_new_input_and_child_rows_are_left_for_the_resume_path(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    task_id = await _task(store)

    def rows(tx: Tx) -> None:
        write_inbox(tx, task_id, "child", "c-1", {"status": "succeeded"})
        write_inbox(tx, task_id, "steer", None, {"input": "shorter, please"})

    await store.write(rows)
    r, cap = await capturing_runner(store, make())
    await r.run(RunRequest(input="write a poem", task_id=task_id))
    assert _user_texts(cap.requests[0])[-1] == "[New input for this conversation] shorter, please"
    left = await store.all(
        "SELECT kind FROM run_inbox WHERE task_id = ? AND consumed_ms IS NULL", (task_id,)
    )
    assert [x["kind"] for x in left] == ["child"]
    await store.close()


class _ReadCountingStore(SQLiteStore):
    """The real SQLite store, noting every single-statement read it serves."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads: list[str] = []

    async def all(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        self.reads.append(sql)
        return await super().all(sql, params)


async def test_a_run_whose_inbox_stays_empty_never_reads_it(tmp_path: Path) -> None:
    """Whether the inbox has rows comes back with the run's own writes (open, checkpoint): an empty
    inbox costs no read before each model call."""
    store = await _ReadCountingStore.open(tmp_path / "agen.db")
    assert isinstance(store, _ReadCountingStore)
    task_id = await _task(store)
    r, _cap = await capturing_runner(
        store, make(script(call("step"), call("step"), {"text": "done"})), FnTool("step", _ok)
    )
    res = await r.run(RunRequest(input="work", task_id=task_id))
    assert res.status == "succeeded"
    assert not [sql for sql in store.reads if "run_inbox" in sql]
    await store.close()


async def _ok(args: dict[str, Any]) -> str:
    return "ok"
