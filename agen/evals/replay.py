"""``agen replay``: a recorded run turned into a scenario, re-run, and what changed.

The recorded tool results become mocks (a call answers only with the result recorded for the
same tool and the same arguments), so nothing real is called again. The model answers from the
run's cassette (``model="cassette"``; without one, from the assistant turns of its transcript)
or from the bundle's own provider (``model="bundle"``: what the model does with the bundle as
it is now).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Literal

from agen.bundle import Bundle
from agen.bundle.scenario import BUILTIN, CallCheck, Expect, MockedTool, Scenario, ScenarioModel
from agen.domain import Outcome
from agen.evals.engine import Attempt, run_once
from agen.wire.evals import GetReplaySourceResponse

ModelSource = Literal["cassette", "bundle"]


@dataclass
class ReplayPlan:
    scenario: Scenario
    specs: dict[str, dict[str, Any]]
    recorded_calls: list[dict[str, Any]]
    recorded_outcome: Outcome | None  # None: the recorded run has none (it never ended)
    from_cassette: bool


def _transcript_interactions(src: GetReplaySourceResponse) -> list[dict[str, Any]]:
    """The model's answers as the transcript kept them (a run recorded without recordInteractions)."""
    out: list[dict[str, Any]] = []
    for m in src.messages:
        if m.role != "assistant":
            continue
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments or {}} for c in m.tool_calls]
        out.append(
            {
                "turn": len(out),
                "response": {
                    "text": m.content or "",
                    "tool_calls": calls,
                    "finish_reason": "tool_calls" if calls else "stop",
                },
            }
        )
    return out


def plan(src: GetReplaySourceResponse, model: ModelSource) -> ReplayPlan:
    results = {m.tool_call_id: m for m in src.messages if m.role == "tool" and m.tool_call_id}
    calls: list[dict[str, Any]] = []
    mocks: list[MockedTool] = []
    for m in src.messages:
        if m.role != "assistant":
            continue
        for c in m.tool_calls:
            args = c.arguments if isinstance(c.arguments, dict) else {}
            calls.append({"name": c.name, "arguments": args})
            res = results.get(c.id)
            if c.name not in BUILTIN and res is not None:
                mocks.append(
                    MockedTool(
                        name=c.name, args=args, result=res.content or "", is_error=res.is_error
                    )
                )
    specs: dict[str, dict[str, Any]] = {}
    if src.interactions:
        for spec in (src.interactions[0].get("request") or {}).get("tools") or []:
            fn = spec.get("function") or {}
            if fn.get("name"):
                specs[str(fn["name"])] = fn
    interactions = src.interactions or _transcript_interactions(src)
    recorded = Outcome.model_validate(src.run.outcome) if src.run.outcome else None
    scenario = Scenario(
        name=src.run.id,
        input=src.run.input or "",
        tools=mocks,
        model=ScenarioModel(provider="replay", interactions=interactions)
        if model == "cassette"
        else None,
        expect=Expect(
            status=None if recorded is None else recorded.status.value,
            called=[
                CallCheck(name=c["name"], args=c["arguments"])
                for c in calls
                if c["name"] not in BUILTIN
            ],
        ),
    )
    return ReplayPlan(scenario, specs, calls, recorded, bool(src.interactions))


def call_line(call: dict[str, Any]) -> str:
    return f"{call['name']}({json.dumps(call['arguments'], sort_keys=True, ensure_ascii=False)})"


def diff(p: ReplayPlan, a: Attempt) -> dict[str, Any]:
    """What changed between the recorded run and the replay: tool calls (and order), outcome."""
    before = [call_line(c) for c in p.recorded_calls]
    after = [call_line(c) for c in a.calls]
    now = {"status": a.status, "summary": a.summary, "data": a.data}
    o = p.recorded_outcome
    was = {
        "status": None if o is None else o.status.value,
        "summary": "" if o is None else o.summary,
        "data": None if o is None else o.data,
    }
    return {
        "calls": {
            "before": p.recorded_calls,
            "after": a.calls,
            "changed": before != after,
            "diff": list(
                difflib.unified_diff(
                    before, after, "recorded", "replay", lineterm="", n=len(before)
                )
            ),
        },
        "outcome": {"before": was, "after": now, "changed": was != now},
        "changed": before != after or was != now,
    }


async def replay(
    src: GetReplaySourceResponse, bundle: Bundle, model: ModelSource
) -> tuple[ReplayPlan, Attempt]:
    """Re-run the recorded run in a scratch store removed after."""
    import tempfile
    from pathlib import Path

    from agen.store import open_store

    p = plan(src, model)
    with tempfile.TemporaryDirectory(prefix="agen-replay-") as scratch:
        store = await open_store(str(Path(scratch) / "replay.db"))
        try:
            attempt = await run_once(store, bundle, p.scenario, 0, specs=p.specs)
        finally:
            await store.close()
    return p, attempt


def scenario_file(p: ReplayPlan) -> dict[str, Any]:
    """The recorded run as a scenario for ``agen eval`` (model: the cassette; tools: recorded results)."""
    s = p.scenario
    data = s.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
    data["name"], data["input"] = s.name, s.input
    return data
