"""Run one scenario once: the bundle's engine, a scratch store, mocked tools, a chosen model.

Nothing reaches the real fleet: the run is recorded in the scratch store the caller owns, the
bundle's MCP servers are never started (its tools are the scenario's mocks), and asks are denied
(no one is there to approve). The bundle's permission rules still apply.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from agen.bundle import Bundle
from agen.evals.mocks import MockToolset
from agen.evals.scenario import BUILTIN, Expect, Scenario, subset, wire
from agen.runner.loop import Runner
from agen.runner.permissions import BundlePolicy
from agen.runner.policy import DenyAsks
from agen.runner.providers import Account
from agen.runner.types import RunRequest
from agen.store import new_ulid
from agen.store.base import Store


@dataclass
class Attempt:
    """One run of one scenario: what happened and which expectations failed."""

    scenario: str
    run_index: int
    status: str
    summary: str
    data: Any
    calls: list[dict[str, Any]]
    failures: list[str] = field(default_factory=list)
    duration_ms: int = 0

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "run": self.run_index,
            "passed": self.passed,
            "status": self.status,
            "summary": self.summary,
            "data": self.data,
            "calls": self.calls,
            "failures": self.failures,
            "durationMs": self.duration_ms,
        }


def _accounts(scenario: Scenario, run_index: int) -> list[Account] | None:
    """The scenario's model, or None: the bundle's own provider answers."""
    m = scenario.model
    if m is None:
        return None
    if m.provider == "fake":
        from agen.runner.providers.fake import FakeProvider

        return [Account(FakeProvider(m.script_for(run_index)), ["fake"], "fake")]
    from agen.runner.providers.replay import ReplayProvider, cassette_interactions

    return [
        Account(ReplayProvider(cassette_interactions(m.interactions or [])), ["replay"], "replay")
    ]


async def run_once(
    store: Store,
    bundle: Bundle,
    scenario: Scenario,
    run_index: int,
    *,
    specs: dict[str, dict[str, Any]] | None = None,
) -> Attempt:
    """Run the scenario's input once through the bundle and check its expectations."""
    started = time.monotonic()
    toolset = MockToolset(scenario.tools, specs=specs, skip=BUILTIN)
    runner = Runner(
        store,
        bundle,
        owner=f"eval:{new_ulid()}",
        toolsets=[toolset],
        policy=BundlePolicy(bundle.config.permissions, store=store),
        gate=DenyAsks(),
        accounts=_accounts(scenario, run_index),
    )
    try:
        result = await runner.run(
            RunRequest(
                input=scenario.input, namespace="eval", deployment=bundle.name, source="eval"
            )
        )
    finally:
        await runner.close()
    calls = await run_calls(store, result.run_id)
    o = result.outcome
    attempt = Attempt(
        scenario.name,
        run_index,
        o.status,
        o.summary,
        o.data,
        calls,
        duration_ms=int((time.monotonic() - started) * 1000),
    )
    attempt.failures = check(scenario.expect, attempt)
    return attempt


async def run_calls(store: Store, run_id: str) -> list[dict[str, Any]]:
    """Every tool call the model made in a run, in order, built-ins (finish) included."""
    rows = await store.all(
        "SELECT tool_calls FROM messages WHERE run_id = ? AND role = 'assistant' "
        "AND tool_calls IS NOT NULL ORDER BY seq",
        (run_id,),
    )
    out: list[dict[str, Any]] = []
    for r in rows:
        for c in json.loads(r["tool_calls"]) or []:
            out.append({"name": str(c.get("name") or ""), "arguments": c.get("arguments") or {}})
    return out


def json_path(data: Any, path: str) -> tuple[bool, Any]:
    """A tiny JSON path: ``$``, ``.key`` and ``[index]`` steps. (found, value)."""
    import re

    value = data
    for key, index in re.findall(r"\.([^.\[\]]+)|\[(\d+)\]", path[1:]):
        if key:
            if not isinstance(value, dict) or key not in value:
                return False, None
            value = value[key]
        else:
            i = int(index)
            if not isinstance(value, list) or i >= len(value):
                return False, None
            value = value[i]
    return True, value


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
