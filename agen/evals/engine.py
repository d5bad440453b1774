"""Run one scenario once: the bundle's engine, a scratch store, mocked tools, a chosen model.

Nothing reaches the real fleet: the run is recorded in the store the caller owns, the bundle's
MCP servers are never started (its tools are the scenario's mocks), and asks are denied (no one
is there to approve). The bundle's permission rules still apply. A multi-turn scenario is one
conversation: each user message is a run with the same conversation key, so later turns see
the earlier ones, and each turn's checks run once it is answered.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from agen.bundle import Bundle
from agen.bundle.scenario import BUILTIN, Expect, Scenario, Signal, subset, wire
from agen.evals.context import EvalContext, ToolCall
from agen.evals.grading import CheckResult, Judge, run_checks, scenario_score
from agen.evals.mocks import MockToolset
from agen.evals.paths import json_path
from agen.runner.loop import Runner
from agen.runner.permissions import BundlePolicy
from agen.runner.policy import DenyAsks
from agen.runner.providers import Account
from agen.runner.types import RunRequest
from agen.store import new_ulid
from agen.store.base import Store, dumps
from agen.store.records import Amount, Count, columns


@dataclass
class Attempt:
    """One run of one scenario: what happened, each check's score, and what failed."""

    scenario: str
    run_index: int
    status: str
    summary: str
    data: Any
    calls: list[dict[str, Any]]
    failures: list[str] = field(default_factory=list)
    duration_ms: int = 0
    checks: list[CheckResult] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    turns: int = 1
    run_ids: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def score(self) -> float:
        return scenario_score(self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "run": self.run_index,
            "passed": self.passed,
            "score": round(self.score, 4),
            "status": self.status,
            "summary": self.summary,
            "data": self.data,
            "calls": self.calls,
            "checks": [c.to_dict() for c in self.checks],
            "failures": self.failures,
            "durationMs": self.duration_ms,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "costUsd": round(self.cost_usd, 6),
            "turns": self.turns,
        }


def _accounts(scenario: Scenario, run_index: int, offset: int) -> list[Account] | None:
    """The scenario's model, or None: the bundle's own provider answers. ``offset``: the fake
    script's turns the conversation's earlier runs already used."""
    m = scenario.model
    if m is None:
        return None
    if m.provider == "fake":
        from agen.runner.providers.fake import FakeProvider

        return [Account(FakeProvider(m.script_for(run_index)[offset:]), ["fake"], "fake")]
    from agen.runner.providers.replay import ReplayProvider, cassette_interactions

    return [
        Account(ReplayProvider(cassette_interactions(m.interactions or [])), ["replay"], "replay")
    ]


async def _signal(store: Store, task_id: str, signals: list[Signal]) -> None:
    """The turn's signals wait in its task's inbox, so the run reads them before its first model call."""

    def fn(tx: Any) -> None:
        for s in signals:
            tx.execute(
                "INSERT INTO run_inbox (id, task_id, kind, ref, payload, created_ms) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    new_ulid(),
                    task_id,
                    s.kind,
                    s.from_task if s.kind == "signal" else None,
                    dumps({"message": s.message}),
                    tx.now_ms,
                ),
            )

    await store.write(fn)


async def run_once(
    store: Store,
    bundle: Bundle,
    scenario: Scenario,
    run_index: int,
    *,
    specs: dict[str, dict[str, Any]] | None = None,
    judge: Judge | None = None,
    root: Path | None = None,
) -> Attempt:
    """Run the scenario's conversation once through the bundle and score its checks."""
    started = time.monotonic()
    toolset = MockToolset(scenario.tools, specs=specs, skip=BUILTIN)
    judge = judge or Judge(bundle)
    turns = scenario.conversation
    key = f"eval:{new_ulid()}" if len(turns) > 1 else None
    attempt = Attempt(scenario.name, run_index, "", "", None, [], turns=len(turns))
    calls: list[ToolCall] = []
    model_turns = 0
    for i, turn in enumerate(turns, 1):
        runner = Runner(
            store,
            bundle,
            owner=f"eval:{new_ulid()}",
            toolsets=[toolset],
            policy=BundlePolicy(bundle.config.permissions, store=store),
            gate=DenyAsks(),
            accounts=_accounts(scenario, run_index, model_turns),
        )
        task_id = None
        if turn.signals:
            task_id = new_ulid()
            await _signal(store, task_id, turn.signals)
        try:
            result = await runner.run(
                RunRequest(
                    input=turn.input,
                    namespace="eval",
                    deployment=bundle.name,
                    source="eval",
                    conversation_key=key,
                    task_id=task_id,
                )
            )
        finally:
            await runner.close()
        attempt.run_ids.append(result.run_id)
        row = await store.row(
            _Spent, f"SELECT {columns(_Spent)} FROM runs WHERE id = ?", (result.run_id,)
        )
        if row is not None:
            model_turns += row.turns
            attempt.input_tokens += row.input_tokens
            attempt.output_tokens += row.output_tokens
            attempt.cost_usd += row.cost_usd
        calls += await run_tool_calls(store, result.run_id)
        o = result.outcome
        attempt.status, attempt.summary, attempt.data = o.status, o.summary, o.data
        attempt.duration_ms = int((time.monotonic() - started) * 1000)
        ctx = EvalContext(
            scenario=scenario.name,
            input=turn.input,
            turn=i,
            status=attempt.status,
            summary=attempt.summary,
            data=attempt.data,
            calls=list(calls),
            duration_ms=attempt.duration_ms,
            input_tokens=attempt.input_tokens,
            output_tokens=attempt.output_tokens,
            cost_usd=attempt.cost_usd,
            model_turns=model_turns,
        )
        attempt.calls = [{"name": c.name, "arguments": c.arguments} for c in calls]
        if len(turns) > 1:
            _score(
                attempt,
                turn.expect,
                await run_checks(turn.checks, ctx, i, judge=judge, root=root),
                i,
            )
        if i == len(turns):
            _score(
                attempt,
                scenario.expect,
                await run_checks(scenario.checks, ctx, None, judge=judge, root=root),
                None,
            )
        if i < len(turns) and result.outcome.status == "failed":
            attempt.failures.append(
                f"turn {i}: the run failed ({o.reason or o.summary}); the conversation stops here"
            )
            break
    return attempt


def _score(attempt: Attempt, expect: Expect, results: list[CheckResult], turn: int | None) -> None:
    """Add the ``expect`` block (one check: all its lines hold) and the checks to the attempt."""
    where = f"turn {turn}: " if turn is not None else ""
    lines = check(expect, attempt)
    if expect != Expect():
        attempt.checks.append(
            CheckResult(
                "expect", "expect", 0.0 if lines else 1.0, not lines, "; ".join(lines), turn
            )
        )
    attempt.failures += [where + line for line in lines]
    attempt.checks += results
    attempt.failures += [f"{where}{r.name}: {r.reason}" for r in results if not r.passed]


class _Spent(NamedTuple):
    """What a run used, as its row adds it up."""

    turns: Count
    input_tokens: Count
    output_tokens: Count
    cost_usd: Amount


class _CallMessage(NamedTuple):
    """An assistant message that called tools, or a tool's result."""

    role: str
    tool_calls: str | None  # JSON text
    tool_call_id: str | None
    content: str | None
    is_error: bool


async def run_tool_calls(store: Store, run_id: str) -> list[ToolCall]:
    """Every tool call the model made in a run, in order (finish included), with its result."""
    rows = await store.rows(
        _CallMessage,
        f"SELECT {columns(_CallMessage)} FROM messages WHERE run_id = ?"
        " AND (role = 'tool' OR (role = 'assistant' AND tool_calls IS NOT NULL)) ORDER BY seq",
        (run_id,),
    )
    results = {r.tool_call_id: r for r in rows if r.role == "tool"}
    out: list[ToolCall] = []
    for r in rows:
        if r.role != "assistant":
            continue
        for c in json.loads(r.tool_calls or "null") or []:
            res = results.get(c.get("id"))
            out.append(
                ToolCall(
                    str(c.get("name") or ""),
                    c.get("arguments") or {},
                    None if res is None else str(res.content or ""),
                    res.is_error if res is not None else False,
                )
            )
    return out


def check(expect: Expect, a: Attempt) -> list[str]:
    """The expectations that do not hold, one readable line each."""
    out: list[str] = []
    if expect.status is not None and a.status != expect.status:
        out.append(f"status is {a.status}, expected {expect.status}")
    if expect.summary is not None:
        s = expect.summary
        if s.equals is not None and a.summary != s.equals:
            out.append(f"summary is {a.summary!r}, expected {s.equals!r}")
        out += [f"summary does not contain {t!r}" for t in s.contains if t not in a.summary]
        out += [f"summary contains {t!r}" for t in s.not_contains if t in a.summary]
    for d in expect.data:
        found, value = json_path(a.data, d.path)
        if d.exists is not None and found != d.exists:
            out.append(f"data {d.path} {'is missing' if d.exists else 'exists'}")
        if d.equals is not None and (not found or value != d.equals):
            out.append(
                f"data {d.path} is {json.dumps(value) if found else 'missing'}, expected {json.dumps(d.equals)}"
            )
        if d.contains is not None and (
            not found or d.contains not in (value if isinstance(value, str) else json.dumps(value))
        ):
            out.append(f"data {d.path} does not contain {d.contains!r}")
    for c in expect.called:
        if not any(
            wire(c.name) == call["name"] and (c.args is None or subset(c.args, call["arguments"]))
            for call in a.calls
        ):
            args = f" with {json.dumps(c.args)}" if c.args is not None else ""
            out.append(f"{c.name} was not called{args}")
    for name in expect.not_called:
        if any(wire(name) == call["name"] for call in a.calls):
            out.append(f"{name} was called")
    return out
