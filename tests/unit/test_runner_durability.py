from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agen.errors import FencedError
from agen.runner.records import Checkpoint, write_checkpoint
from agen.runner.types import RunRequest
from tests.runner_helpers import FnTool, make, open_store, runner, script


async def test_claiming_a_live_run_resumes_it_and_fences_the_old_owner(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    started, release = asyncio.Event(), asyncio.Event()
    side_effects: list[str] = []

    async def charge(args: dict[str, Any]) -> str:
        side_effects.append("charged")
        return "charged 5 EUR"

    async def ship(args: dict[str, Any]) -> str:
        started.set()
        await release.wait()
        side_effects.append("shipped")
        return "shipped"

    turn = {"toolCalls": [{"name": "charge", "arguments": {}}, {"name": "ship", "arguments": {}}]}
    h = script(turn, {"text": "order handled"})
    h["parallelToolCalls"] = False
    b = make(h)
    old = runner(
        store,
        b,
        FnTool("charge", charge, side_effect=True),
        FnTool("ship", ship, side_effect=True),
        owner="host-a",
    )
    task = asyncio.create_task(old.run(RunRequest(input="order", task_id="t-1")))
    await started.wait()

    new = runner(
        store,
        b,
        FnTool("charge", charge, side_effect=True),
        FnTool("ship", ship, side_effect=True),
        owner="host-b",
    )
    res = await new.run(RunRequest(input="order", task_id="t-1", attempt=2))
    assert res.resumed and res.epoch == 2 and res.outcome.summary == "order handled"
    assert side_effects == ["charged"]  # neither call ran again
    tools = await store.all(
        "SELECT name, content, is_error FROM messages WHERE run_id = ? AND role = 'tool'"
        " ORDER BY seq",
        (res.run_id,),
    )
    assert (
        tools[0]["content"] == "charged 5 EUR" and tools[0]["is_error"] == 0
    )  # completed effect: its result
    assert tools[1]["content"].startswith("effect_unknown") and tools[1]["is_error"] == 1

    release.set()  # the old owner wakes up and tries to record its effect
    with pytest.raises(FencedError):
        await task
    spans = await store.all(
        "SELECT id, parent_id, status, attrs FROM spans WHERE run_id = ? AND name = 'agen.run'"
        " ORDER BY started_ms",
        (res.run_id,),
    )
    assert [s["status"] for s in spans] == ["interrupted", "ok"]
    assert spans[1]["parent_id"] == spans[0]["id"] and '"agen.attempt":2' in spans[1]["attrs"]
    run = await store.one("SELECT epoch, owner, status FROM runs WHERE id = ?", (res.run_id,))
    assert run == {"epoch": 2, "owner": "host-b", "status": "succeeded"}
    await store.close()


async def test_a_checkpoint_with_a_stale_epoch_is_rejected(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    res = await runner(store, make(script({"text": "hi"}))).run(
        RunRequest(input="x", task_id="t-2")
    )
    row = await store.one("SELECT conversation_id FROM runs WHERE id = ?", (res.run_id,))
    assert row is not None
    cp = Checkpoint(
        run_id=res.run_id, epoch=0, conversation_id=row["conversation_id"], turns=9, next_seq=99
    )
    with pytest.raises(FencedError, match="claimed by another owner"):
        await store.write(lambda tx: write_checkpoint(tx, cp))
    await store.close()


async def test_an_idempotent_started_effect_runs_again_on_resume(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    started = asyncio.Event()
    calls: list[str] = []

    async def put(args: dict[str, Any]) -> str:
        calls.append("put")
        if len(calls) == 1:
            started.set()
            await asyncio.sleep(30)
        return "stored"

    b = make(script({"toolCalls": [{"name": "put", "arguments": {"k": 1}}]}, {"text": "ok"}))
    old = runner(store, b, FnTool("put", put, side_effect=True, idempotent=True), owner="a")
    task = asyncio.create_task(old.run(RunRequest(input="go", task_id="t-3")))
    await started.wait()
    res = await runner(
        store, b, FnTool("put", put, side_effect=True, idempotent=True), owner="b"
    ).run(RunRequest(input="go", task_id="t-3"))
    assert calls == ["put", "put"] and res.outcome.summary == "ok"
    msg = await store.one(
        "SELECT content FROM messages WHERE run_id = ? AND role = 'tool'", (res.run_id,)
    )
    assert msg == {"content": "stored"}
    task.cancel()
    with pytest.raises((asyncio.CancelledError, FencedError)):
        await task
    await store.close()


async def test_history_with_an_unanswered_tool_call_gets_a_synthetic_result(tmp_path: Path) -> None:
    store = await open_store(tmp_path)

    async def hang(args: dict[str, Any]) -> str:
        await asyncio.sleep(30)
        return "never"

    b = make(script({"toolCalls": [{"name": "hang", "arguments": {}}]}, {"text": "second run"}))
    r = runner(store, b, FnTool("hang", hang))
    cancel = asyncio.Event()
    task = asyncio.create_task(r.run(RunRequest(input="one", conversation_key="k"), cancel=cancel))
    await asyncio.sleep(0.1)
    cancel.set()
    assert (await task).status == "cancelled"
    from tests.runner_helpers import capturing_runner

    r2, cap = await capturing_runner(store, make({"provider": "fake"}))
    await r2.run(RunRequest(input="two", conversation_key="k"))
    wire = cap.requests[0].messages
    i = next(i for i, m in enumerate(wire) if m.get("tool_calls"))
    assert wire[i + 1]["role"] == "tool" and wire[i + 1]["content"].startswith("interrupted")
    await store.close()


async def test_a_side_effecting_call_cut_off_before_its_effect_started_runs_once_on_resume(
    tmp_path: Path,
) -> None:
    """The turn is checkpointed before any effect starts; a crash in between leaves a call with
    no ledger row, which never began: the resumed run runs it (once) instead of telling the model
    it was interrupted, so the task does what was asked."""
    crashed = await open_store(tmp_path)
    reached, never = asyncio.Event(), asyncio.Event()
    real_write = crashed.write

    async def write(fn: Any) -> Any:  # the host dies just before the effect's ledger row
        if getattr(fn, "__qualname__", "").startswith("start_effect"):
            reached.set()
            await never.wait()
        return await real_write(fn)

    crashed.write = write  # type: ignore[method-assign]
    charges: list[str] = []

    async def charge(args: dict[str, Any]) -> str:
        charges.append("charged")
        return "charged 5 EUR"

    b = make(script({"toolCalls": [{"name": "charge", "arguments": {}}]}, {"text": "done"}))
    old = runner(crashed, b, FnTool("charge", charge, side_effect=True), owner="host-a")
    task = asyncio.create_task(old.run(RunRequest(input="order", task_id="t-4")))
    await reached.wait()

    store = await open_store(tmp_path)
    res = await runner(store, b, FnTool("charge", charge, side_effect=True), owner="host-b").run(
        RunRequest(input="order", task_id="t-4", attempt=2)
    )
    assert res.resumed and res.outcome.summary == "done"
    assert charges == ["charged"]  # run by the resumed run, once
    tool = await store.one(
        "SELECT content, is_error FROM messages WHERE run_id = ? AND role = 'tool'", (res.run_id,)
    )
    assert tool == {"content": "charged 5 EUR", "is_error": 0}
    effect = await store.one("SELECT state FROM effects WHERE run_id = ?", (res.run_id,))
    unknown = await store.scalar("SELECT effect_unknown FROM runs WHERE id = ?", (res.run_id,))
    assert effect == {"state": "completed"} and unknown == 0
    task.cancel()
    with pytest.raises((asyncio.CancelledError, FencedError)):
        await task
    await store.close()
    await crashed.close()
