from __future__ import annotations

from pathlib import Path
from typing import Any

from agen.runner.budgets import Budget, RunLimits
from agen.runner.context import Context, Msg
from agen.runner.providers.base import ModelUsage
from agen.runner.types import RunRequest
from tests.runner_helpers import FnTool, call, capturing_runner, echo, fail, make, open_store

LOOP = [call("look", n=i) for i in range(20)]


async def test_max_turns_ends_partial_with_a_report_asked_for_without_tools(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    h = {"provider": "fake", "fake": {"script": [*LOOP[:3], {"text": "my report"}]}}
    r, cap = await capturing_runner(
        store, make(h, {"limits": {"maxTurns": 3, "reportTokens": 77}}), FnTool("look", echo)
    )
    res = await r.run(RunRequest(input="explore"))
    assert res.outcome.status == "partial" and res.outcome.reason == "max_turns"
    assert res.outcome.summary == "my report"
    last = cap.requests[-1]
    assert len(cap.requests) == 4 and last.tool_choice == "none" and last.max_tokens == 77
    assert "You have reached the maximum number of turns" in last.messages[-1]["content"]
    await store.close()


async def test_token_budget_counts_cached_input_at_its_weight_and_ends_the_run(
    tmp_path: Path,
) -> None:
    usage = {"inputTokens": 1000, "outputTokens": 100}
    turns = [{**c, "usage": usage} for c in LOOP[:5]]
    h = {
        "provider": "fake",
        "maxOutputTokens": 4000,
        "fake": {"script": [*turns, {"text": "report"}]},
    }
    store = await open_store(tmp_path)
    r, cap = await capturing_runner(
        store, make(h, {"limits": {"maxTokensPerRun": 2500}}), FnTool("look", echo)
    )
    res = await r.run(RunRequest(input="go"))
    assert res.outcome.status == "partial" and res.outcome.reason == "max_tokens"
    assert len(cap.requests) == 4  # 3 turns use 3300 tokens >= 2500, then the report
    assert cap.requests[1].max_tokens == 2500 - 1100  # maxOutputTokens lowered to what remains
    b = Budget(RunLimits(max_tokens=10_000, cached_weight=0.1), started_ms=0)
    b.add(ModelUsage(input_tokens=1000, output_tokens=0, cached_tokens=1000))
    assert b.tokens == 100
    await store.close()


async def test_usd_budget_applies_only_when_the_provider_reports_cost(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    priced = [
        {**c, "usage": {"inputTokens": 1, "outputTokens": 1, "costUsd": 0.6}} for c in LOOP[:4]
    ]
    h = {"provider": "fake", "fake": {"script": [*priced, {"text": "report"}]}}
    r, _ = await capturing_runner(
        store, make(h, {"limits": {"maxUsdPerRun": 1.0}}), FnTool("look", echo)
    )
    res = await r.run(RunRequest(input="go"))
    assert res.outcome.reason == "max_usd"
    unpriced = [{**c, "usage": {"inputTokens": 1, "outputTokens": 1}} for c in LOOP[:4]]
    h2 = {"provider": "fake", "fake": {"script": [*unpriced, {"text": "done"}]}}
    r2, _ = await capturing_runner(
        store, make(h2, {"limits": {"maxUsdPerRun": 1.0}}), FnTool("look", echo)
    )
    assert (await r2.run(RunRequest(input="go"))).outcome.status == "done"
    await store.close()


async def test_run_duration_limit_ends_the_run_partial(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    h = {"provider": "fake", "fake": {"script": [*LOOP[:3], {"text": "late report"}]}}
    r, _ = await capturing_runner(
        store, make(h, {"limits": {"maxRunDuration": "1ms"}}), FnTool("look", echo)
    )
    res = await r.run(RunRequest(input="go"))
    assert res.outcome.reason == "max_run_duration" and res.outcome.status == "partial"
    await store.close()


async def test_past_half_a_limit_a_late_system_line_follows_the_history(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    h = {"provider": "fake", "fake": {"script": [*LOOP[:3], {"text": "done"}]}}
    r, cap = await capturing_runner(
        store, make(h, {"limits": {"maxTurns": 4}}), FnTool("look", echo)
    )
    await r.run(RunRequest(input="go"))
    assert all(m["role"] != "system" for m in cap.requests[1].messages[1:])  # 1 of 4: no note
    late = cap.requests[2].messages[-1]
    assert late["role"] == "system" and "2 of 4 turns used" in late["content"]
    assert (
        cap.requests[2].messages[0] == cap.requests[1].messages[0]
    )  # the cacheable prefix is unchanged
    await store.close()


async def test_the_same_call_failing_the_same_way_three_times_is_refused(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    same = call("flaky", x=1)
    h = {"provider": "fake", "fake": {"script": [same, same, same, same, {"text": "gave up"}]}}
    tool = FnTool("flaky", fail)
    r, _ = await capturing_runner(store, make(h, {"limits": {"stuckRepeats": 0}}), tool)
    res = await r.run(RunRequest(input="go"))
    assert len(tool.calls) == 3
    rows = await store.all(
        "SELECT content FROM messages WHERE run_id = ? AND role = 'tool' ORDER BY seq",
        (res.run_id,),
    )
    assert rows[3]["content"].startswith("refused: this exact call to flaky failed 3 times")
    await store.close()


async def test_identical_turns_get_one_nudge_then_end_as_stuck(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    same = call("look", n=1)
    h = {"provider": "fake", "fake": {"script": [same] * 8 + [{"text": "stuck report"}]}}
    r, cap = await capturing_runner(
        store, make(h, {"limits": {"stuckRepeats": 2}}), FnTool("look", echo)
    )
    res = await r.run(RunRequest(input="go"))
    assert res.outcome.status == "partial" and res.outcome.reason == "stuck"
    nudges = [
        m for m in cap.requests[-1].messages if "repeated the same calls" in str(m.get("content"))
    ]
    assert len(nudges) == 1
    assert len(cap.requests) == 5  # 2 turns -> nudge, 2 more -> stuck, then the report
    await store.close()


def _msg(
    seq: int, role: str, content: str, run: str = "r1", name: str | None = None, **kw: Any
) -> Msg:
    return Msg(seq, seq, role, content, run, name=name, **kw)


def test_earlier_history_is_trimmed_oldest_first_and_starts_at_a_user_turn() -> None:
    earlier = []
    for i in range(10):
        earlier.append(_msg(2 * i, "user", f"question {i} " + "x" * 400, "old"))
        earlier.append(_msg(2 * i + 1, "assistant", f"answer {i} " + "y" * 400, "old"))
    ctx = Context("system", context_tokens=1000, earlier=earlier)
    ctx.add(_msg(100, "user", "now"))
    out = ctx.messages()
    assert out[0]["role"] == "system" and out[1]["role"] == "user"
    kept = [m["content"].split()[1] for m in out[1:-1]]
    assert kept[-1] == "9" and "0" not in kept and len(out) < 22
    assert out[-1]["content"] == "now"


def test_long_tool_results_of_the_run_are_cut_in_blocks_keeping_the_latest_and_skills() -> None:
    ctx = Context("system", context_tokens=20_000)
    ctx.add(_msg(0, "user", "go"))
    seq = 1
    for i in range(30):
        name = "load_skill" if i == 0 else "fetch"
        ctx.add(
            _msg(seq, "assistant", "", tool_calls=[{"id": f"c{i}", "name": name, "arguments": {}}])
        )
        ctx.add(_msg(seq + 1, "tool", f"result {i} " + "z" * 3000, name=name, tool_call_id=f"c{i}"))
        seq += 2
    out = ctx.messages()
    tools = [m for m in out if m["role"] == "tool"]
    cut = [t for t in tools if "[cut:" in t["content"]]
    assert len(cut) == 16  # whole blocks of eight, oldest first, until the run fits in two thirds
    assert "[cut:" not in tools[0]["content"]  # load_skill results are never cut
    assert all("[cut:" not in t["content"] for t in tools[-4:])  # the latest four stay whole
    assert "from turn" in cut[0]["content"] and "fetch" in cut[0]["content"]
    assert sum(len(m["content"] or "") for m in out) // 4 < 20_000 * 2 // 3 + 1000
    again = ctx.messages()
    assert [m["content"] for m in again] == [m["content"] for m in out]  # stable prefix
