from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agen.errors import ConflictError
from agen.runner.extras import RunExtras
from agen.runner.permissions import BundlePolicy
from agen.runner.sandboxing import EventOrigin
from agen.runner.tools.base import Tool, Toolset
from agen.runner.types import RunRequest
from tests.runner_helpers import (
    FnTool,
    call,
    capturing_runner,
    echo,
    make,
    open_store,
    runner,
    script,
)


async def test_fake_bundle_run_writes_complete_readable_record(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    tool = FnTool("notes.add", echo)
    b = make(script(call("notes_add", text="x"), {"text": "all done"}))
    res = await runner(store, b, tool).run(RunRequest(input="add a note", task_id="t-1"))
    assert (
        res.status == "succeeded"
        and res.outcome.status == "done"
        and res.outcome.summary == "all done"
    )
    run = await store.one("SELECT * FROM runs WHERE id = ?", (res.run_id,))
    assert run is not None and run["turns"] == 2 and run["finished_ms"] is not None
    assert json.loads(run["outcome"])["status"] == "done"
    msgs = await store.all(
        "SELECT role, content, tool_calls FROM messages WHERE run_id = ? ORDER BY seq",
        (res.run_id,),
    )
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert json.loads(msgs[1]["tool_calls"])[0]["name"] == "notes_add"
    spans = await store.all(
        "SELECT name, status, parent_id FROM spans WHERE run_id = ?", (res.run_id,)
    )
    names = sorted(s["name"] for s in spans)
    assert names == ["agen.run", "agen.tool", "gen_ai.chat", "gen_ai.chat"]
    assert {s["status"] for s in spans} == {"ok"}
    usage = await store.all("SELECT * FROM usage WHERE run_id = ?", (res.run_id,))
    assert len(usage) == 2 and all(u["input_tokens"] > 0 for u in usage)
    await store.close()


async def test_finish_rejects_data_that_breaks_the_result_schema_then_accepts_valid_data(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    h = script(
        call("finish", summary="s", data={"n": "x"}),
        call("finish", summary="counted", data={"n": 3}),
    )
    h["result"] = {"schema": schema}
    res = await runner(store, make(h)).run(RunRequest(input="count"))
    assert (
        res.outcome.status == "done"
        and res.outcome.data == {"n": 3}
        and res.outcome.summary == "counted"
    )
    tool_msgs = await store.all(
        "SELECT content, is_error FROM messages WHERE role = 'tool' ORDER BY seq"
    )
    assert tool_msgs[0]["is_error"] == 1 and "result schema" in tool_msgs[0]["content"]
    await store.close()


async def test_running_a_finished_task_again_returns_its_result_without_calling_the_model(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    r, cap = await capturing_runner(store, make(script({"text": "first"})))
    first = await r.run(RunRequest(input="go", task_id="t-9"))
    again = await r.run(RunRequest(input="go", task_id="t-9"))
    assert again.run_id == first.run_id and again.outcome.summary == "first"
    assert len(cap.requests) == 1
    await store.close()


async def test_conversation_key_carries_earlier_runs_into_the_next_request(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    r, cap = await capturing_runner(store, make({"provider": "fake"}))
    await r.run(RunRequest(input="my name is Ada", conversation_key="c1"))
    await r.run(RunRequest(input="what is my name?", conversation_key="c1"))
    contents = [m["content"] for m in cap.requests[-1].messages]
    assert "my name is Ada" in contents and "You said: my name is Ada" in contents
    other = await r.run(RunRequest(input="fresh", conversation_key="c2"))
    assert other.outcome.summary == "You said: fresh"
    assert "my name is Ada" not in [m["content"] for m in cap.requests[-1].messages]
    await store.close()


async def test_a_second_concurrent_run_in_a_conversation_is_refused(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    started, release = asyncio.Event(), asyncio.Event()

    async def hold(args: dict[str, Any]) -> str:
        started.set()
        await release.wait()
        return "held"

    r = runner(store, make(script(call("hold"), {"text": "done"})), FnTool("hold", hold))
    first = asyncio.create_task(r.run(RunRequest(input="one", conversation_key="k")))
    await asyncio.wait_for(started.wait(), 30)  # the first run is inside its tool call: unfinished
    with pytest.raises(ConflictError, match="conversation already has an unfinished run"):
        await r.run(RunRequest(input="two", conversation_key="k"))
    release.set()
    assert (await first).status == "succeeded"
    await store.close()


async def test_tool_calls_of_a_turn_run_concurrently_and_results_keep_call_order(
    tmp_path: Path,
) -> None:
    """Call a can only finish once call b has run: that completes only when they run concurrently."""
    store = await open_store(tmp_path)
    turn = {
        "toolCalls": [
            {"name": "step", "arguments": {"tag": "a"}},
            {"name": "step", "arguments": {"tag": "b"}},
        ]
    }
    h = script(turn, {"text": "ok"})
    h["parallelToolCalls"] = True
    b_ran = asyncio.Event()

    async def step(args: dict[str, Any]) -> str:
        if args["tag"] == "a":
            await b_ran.wait()  # finishes after b, yet its result comes first
        else:
            b_ran.set()
        return f"stepped {args['tag']}"

    res = await asyncio.wait_for(
        runner(store, make(h), FnTool("step", step)).run(RunRequest(input="go")), 30
    )
    rows = await store.all(
        "SELECT content FROM messages WHERE run_id = ? AND role = 'tool' ORDER BY seq",
        (res.run_id,),
    )
    assert [r["content"] for r in rows] == ["stepped a", "stepped b"]
    await store.close()


async def test_tool_calls_run_one_after_another_when_parallel_tool_calls_is_off(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    turn = {
        "toolCalls": [
            {"name": "step", "arguments": {"tag": "a"}},
            {"name": "step", "arguments": {"tag": "b"}},
        ]
    }
    h = script(turn, {"text": "ok"})
    h["parallelToolCalls"] = False
    log: list[str] = []

    async def step(args: dict[str, Any]) -> str:
        log.append(f"start {args['tag']}")
        await asyncio.sleep(0)  # a concurrent call would start here
        log.append(f"end {args['tag']}")
        return f"stepped {args['tag']}"

    res = await runner(store, make(h), FnTool("step", step)).run(RunRequest(input="go"))
    assert log == ["start a", "end a", "start b", "end b"]
    rows = await store.all(
        "SELECT content FROM messages WHERE run_id = ? AND role = 'tool' ORDER BY seq",
        (res.run_id,),
    )
    assert [r["content"] for r in rows] == ["stepped a", "stepped b"]
    await store.close()


def _waiting_tool() -> tuple[FnTool, asyncio.Event]:
    """A `wait` tool that never answers (the test stops the run in it), and the event set once the
    run is inside it."""
    started = asyncio.Event()

    async def wait(args: dict[str, Any]) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    return FnTool("wait", wait), started


def _stop(task: asyncio.Task[Any], cancel: asyncio.Event, first: str) -> None:
    """The first stop: the task cancelled, or the run's cancel event set."""
    if first == "task":
        task.cancel()
    else:
        cancel.set()


async def test_cancel_event_ends_the_run_cancelled(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    wait, started = _waiting_tool()
    r = runner(store, make(script(call("wait"), {"text": "never"})), wait)
    cancel = asyncio.Event()
    task = asyncio.create_task(r.run(RunRequest(input="go"), cancel=cancel))
    await asyncio.wait_for(started.wait(), 30)  # cancel while the run is in its tool call
    cancel.set()
    res = await asyncio.wait_for(task, 5)
    assert res.status == "cancelled" and res.outcome.status == "cancelled"
    run = await store.one("SELECT status, finished_ms FROM runs WHERE id = ?", (res.run_id,))
    assert run is not None and run["status"] == "cancelled" and run["finished_ms"] is not None
    span = await store.one(
        "SELECT status FROM spans WHERE run_id = ? AND name = 'agen.run'", (res.run_id,)
    )
    assert span is not None and span["status"] == "cancelled"
    await store.close()


@pytest.mark.parametrize("first", ["task", "event"])
async def test_a_second_stop_waits_for_the_cancelled_outcome_to_be_written(
    tmp_path: Path, first: str
) -> None:
    """A run can be stopped twice (a cancel, then its lost lease): the second stop must not cut the
    write of the cancelled outcome short, so when the run's task ends its record says cancelled; and
    the second stop still ends the task, whether the first came as a task cancel or as the run's
    cancel event (which alone ends the run with a result)."""
    store = await open_store(tmp_path)
    wait, started = _waiting_tool()
    r = runner(store, make(script(call("wait"), {"text": "never"})), wait)
    gate = {"armed": False, "written": False}
    writing, release = asyncio.Event(), asyncio.Event()
    real_write = store.write

    async def gated_write(fn: Any) -> Any:
        if not gate["armed"]:
            return await real_write(fn)
        gate["armed"] = False  # the first write after the cancel: the run's cancelled outcome
        writing.set()
        await release.wait()
        value = await real_write(fn)
        gate["written"] = True
        return value

    store.write = gated_write  # type: ignore[method-assign]
    cancel = asyncio.Event()
    task = asyncio.create_task(r.run(RunRequest(input="go"), cancel=cancel))
    written_when_done: list[bool] = []
    task.add_done_callback(lambda _t: written_when_done.append(gate["written"]))
    await asyncio.wait_for(started.wait(), 30)
    gate["armed"] = True
    _stop(task, cancel, first)
    await asyncio.wait_for(writing.wait(), 30)
    task.cancel()  # stopped again while it writes
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert written_when_done == [True]
    run = await store.one("SELECT status, finished_ms FROM runs")
    assert run is not None and run["status"] == "cancelled" and run["finished_ms"] is not None
    await store.close()


def _is_dir(path: str | None) -> bool:
    return path is not None and Path(path).is_dir()


@pytest.mark.parametrize("first", ["task", "event"])
async def test_a_second_stop_while_run_servers_close_still_removes_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str
) -> None:
    """A cancelled run stops its own servers (${WORKSPACE}), then removes its per_task folder. A second
    stop while the servers close must not skip the removal: the folder is gone when the task ends, and
    the task ends stopped (also when the first stop was the cancel event, which alone returns)."""
    monkeypatch.setenv("AGEN_HOME", str(tmp_path / "home"))
    store = await open_store(tmp_path)
    wait, started = _waiting_tool()
    closing, release = asyncio.Event(), asyncio.Event()

    class RunServer(Toolset):
        """The run's own server: its close takes until the test releases it."""

        async def start(self) -> list[Tool]:
            return [wait]

        async def close(self) -> None:
            closing.set()
            await release.wait()

    folders: list[str | None] = []

    def run_toolsets(folder: str | None, _origin: EventOrigin) -> list[Toolset]:
        folders.append(folder)
        return [RunServer()]

    b = make(script(call("wait"), {"text": "never"}), {"workspace": {"mode": "per_task"}})
    r = runner(store, b, extras=RunExtras(b, store, run_toolsets=run_toolsets))
    cancel = asyncio.Event()
    task = asyncio.create_task(r.run(RunRequest(input="go", task_id="t-ws"), cancel=cancel))
    left_when_done: list[bool] = []
    task.add_done_callback(lambda _t: left_when_done.append(_is_dir(folders[0])))
    await asyncio.wait_for(started.wait(), 30)
    assert _is_dir(folders[0])
    _stop(task, cancel, first)
    await asyncio.wait_for(closing.wait(), 30)
    task.cancel()  # stopped again while its server closes
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert left_when_done == [False]
    await store.close()


class Hooks:
    def __init__(self) -> None:
        self.held = False
        self.progress: list[Any] = []
        self.inbox: list[str] = []
        self.delegation = None  # no Hub to delegate through

    async def is_held(self, task_id: str) -> bool:
        return self.held

    async def report_progress(self, task_id: str | None, progress: dict[str, Any]) -> None:
        self.progress.append((task_id, progress))

    async def drain_inbox(self, task_id: str) -> list[str]:
        out, self.inbox = self.inbox, []
        return out


async def test_a_held_task_suspends_before_its_model_call_and_resumes_later(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    hooks = Hooks()
    hooks.held = True
    r, cap = await capturing_runner(store, make(script({"text": "hello"})), hooks=hooks)
    res = await r.run(RunRequest(input="hi", task_id="t-h"))
    assert res.suspended == "resume" and res.status == "running" and not cap.requests
    hooks.held = False
    done = await r.run(RunRequest(input="hi", task_id="t-h"))
    assert done.outcome.summary == "hello" and done.epoch == 2
    await store.close()


async def test_report_progress_reaches_the_hook_and_inbox_notes_reach_the_model(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    hooks = Hooks()
    hooks.inbox = ["also mention cats"]
    r, cap = await capturing_runner(
        store,
        make(script(call("report_progress", note="half", percent=50), {"text": "ok"})),
        hooks=hooks,
    )
    await r.run(RunRequest(input="hi", task_id="t-p"))
    assert hooks.progress == [("t-p", {"note": "half", "percent": 50})]
    assert "also mention cats" in [m["content"] for m in cap.requests[0].messages]
    await store.close()


async def test_an_over_long_tool_result_is_saved_as_an_artifact_and_the_model_gets_a_preview(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)

    async def big(args: dict[str, Any]) -> str:
        return "line\n" * 1000

    h = script(call("big"), {"text": "ok"})
    h["maxToolResultChars"] = 500
    res = await runner(store, make(h), FnTool("big", big)).run(RunRequest(input="go"))
    msg = await store.one(
        "SELECT content FROM messages WHERE run_id = ? AND role = 'tool'", (res.run_id,)
    )
    assert msg is not None and len(msg["content"]) < 700 and "sha256:" in msg["content"]
    art = await store.one("SELECT id, size FROM artifacts")
    assert art is not None and art["size"] == 5000 and art["id"] in msg["content"]
    await store.close()


async def test_artifacts_are_content_addressed_and_read_back_in_pages(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    text = "abcdefghij" * 10
    b = make(
        script(
            call("save_artifact", name="r", content=text),
            call("save_artifact", name="again", content=text),
            {"text": "ok"},
        )
    )
    await runner(store, b).run(RunRequest(input="go"))
    rows = await store.all("SELECT id FROM artifacts")
    assert len(rows) == 1
    aid = rows[0]["id"]
    b2 = make(script(call("read_artifact", id=aid, offset=10, length=20), {"text": "ok"}))
    res = await runner(store, b2).run(RunRequest(input="read"))
    msg = await store.one(
        "SELECT content FROM messages WHERE run_id = ? AND role = 'tool'", (res.run_id,)
    )
    assert (
        msg is not None
        and msg["content"].startswith(text[10:30])
        and "next offset 30" in msg["content"]
    )
    await store.close()


async def test_load_skill_returns_the_skill_and_the_prompt_lists_it(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    skill = "---\nname: tea\ndescription: brewing tea\n---\nBoil water first.\n"
    b = make(
        script(call("load_skill", name="tea"), {"text": "ok"}), files={"skills/tea/SKILL.md": skill}
    )
    r, cap = await capturing_runner(store, b)
    res = await r.run(RunRequest(input="tea?"))
    assert "- tea: brewing tea" in cap.requests[0].messages[0]["content"]
    msg = await store.one(
        "SELECT content FROM messages WHERE run_id = ? AND role = 'tool'", (res.run_id,)
    )
    assert msg is not None and "Boil water first." in msg["content"]
    await store.close()


@pytest.mark.parametrize("conditional", [False, True])
async def test_a_deny_rule_on_report_progress_or_load_skill_is_enforced(
    tmp_path: Path, conditional: bool
) -> None:
    """Seed 000 exempts only finish and the artifact tools from the permission rules. A bundle that
    denies report_progress and load_skill outright hides them from the model; a deny under a
    condition (here: below operator trust) refuses the call. Either way no progress reaches the
    task's owner and no skill is read."""
    store = await open_store(tmp_path)
    skill = "---\nname: tea\ndescription: brewing tea\n---\nBoil water first.\n"
    names = ["report_progress", "load_skill"]
    when = {"trustBelow": "operator"}
    deny = [{"tool": n, "when": when} for n in names] if conditional else names
    b = make(
        script(
            call("report_progress", note="half", percent=50),
            call("load_skill", name="tea"),
            {"text": "ok"},
        ),
        config={"permissions": {"deny": deny, "default": "allow"}},
        files={"skills/tea/SKILL.md": skill},
    )
    hooks = Hooks()
    policy = BundlePolicy(b.config.permissions)
    r, cap = await capturing_runner(store, b, hooks=hooks, policy=policy)
    res = await r.run(RunRequest(input="tea?", task_id="t-d"))
    assert res.status == "succeeded"
    offered = {t["function"]["name"] for t in cap.requests[0].tools}
    assert "finish" in offered and (
        offered >= set(names) if conditional else not offered & set(names)
    )
    tool_msgs = await store.all(
        "SELECT content, is_error FROM messages WHERE run_id = ? AND role = 'tool'", (res.run_id,)
    )
    assert [m["is_error"] for m in tool_msgs] == [1, 1]
    for m, name in zip(tool_msgs, names, strict=True):
        refused = "denied: a permission rule" if conditional else f"unknown tool {name!r}"
        assert str(m["content"]).startswith(refused), m["content"]
    assert "Boil water first." not in str([m["content"] for m in tool_msgs])
    assert hooks.progress == []
    await store.close()


class _Owner:
    """A Runner's owner through the typed RunHooks port: one note waiting, then held on the second call."""

    def __init__(self) -> None:
        self.notes = ["also mention the weather"]
        self.calls = 0
        self.progress: list[dict[str, Any]] = []
        self.delegation = None  # no Hub to delegate through

    async def is_held(self, task_id: str) -> bool:
        self.calls += 1
        return self.calls > 1

    async def drain_inbox(self, task_id: str) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    async def report_progress(self, task_id: str | None, progress: dict[str, Any]) -> None:
        self.progress.append(progress)


async def test_an_owners_note_reaches_the_model_and_its_hold_suspends_the_run_before_the_next_call(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    owner = _Owner()
    b = make(script(call("report_progress", note="half way", percent=50), {"text": "done"}))
    r, cap = await capturing_runner(store, b, hooks=owner)
    res = await r.run(RunRequest(input="go", task_id="t-hooks"))
    assert [m["content"] for m in cap.requests[0].messages][-2:] == [
        "go",
        "also mention the weather",
    ]
    assert owner.progress == [{"note": "half way", "percent": 50}]
    assert res.suspended == "resume" and len(cap.requests) == 1
    await store.close()
