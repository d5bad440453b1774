"""Running one turn's tool calls: permissions, approvals, the effect ledger, redaction, the cap.

Calls run concurrently unless harness.parallelToolCalls is off or one of them needs an
approval; results come back in call order. A call whose approval is still pending ends the
list: the run suspends there and the rest of the turn runs once the approval is decided.
Side-effecting tools are recorded ``started`` before they run and ``completed`` after; a
cancelled call leaves its effect started. In the last turn a wrap-up request gives a run (graceful
cancel, interrupt) every call that has a side effect, starts a child or needs an approval is refused.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from agen.otel.ids import w3c_span_id
from agen.runner import artifacts
from agen.runner.effects import (
    complete_effect,
    effect_key,
    note_effect,
    start_effect,
    started_note,
)
from agen.runner.policy import ApprovalGate, ApprovalRequest, ToolPolicy, Verdict
from agen.runner.providers.base import ToolCallOut
from agen.runner.state import RunState
from agen.runner.tools.base import CallLedger, Tool, ToolError, ToolResult
from agen.store.base import Store


@dataclass
class CallResult:
    call: ToolCallOut
    index: int
    content: str
    is_error: bool = False
    data: Any = None
    suspend: str | None = None
    tool: str | None = None  # registered name
    approval: str | None = None  # the call waits for this approval: the run suspends before it runs
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class CallEnv:
    store: Store
    policy: ToolPolicy
    gate: ApprovalGate
    parallel: bool
    max_result_chars: int


def _ms() -> int:
    return time.time_ns() // 1_000_000


async def execute_calls(
    env: CallEnv, st: RunState, calls: list[ToolCallOut], indices: list[int] | None = None
) -> list[CallResult]:
    idx = indices if indices is not None else list(range(len(calls)))
    st.turn_children = max(1, sum(1 for c in calls if _starts_child(st, c)))
    verdicts: list[Verdict | None] = []
    for call in calls:
        tool = st.tools.get(call.name)
        if tool is None or tool.bypass_permissions or call.arguments_error:
            verdicts.append(None)
        else:
            verdicts.append(await env.policy.check(tool, call.arguments, st.tool_context(call.id)))
    sequential = (
        not env.parallel
        or len(calls) < 2
        or any(v is not None and v.decision == "ask" for v in verdicts)
    )
    if sequential:
        out: list[CallResult] = []
        for c, i, v in zip(calls, idx, verdicts, strict=True):
            out.append(await _one(env, st, c, i, v))
            if out[-1].approval is not None:
                break  # the rest of the turn waits with it: they run (in order) once it is decided
        return out
    return list(
        await asyncio.gather(
            *(_one(env, st, c, i, v) for c, i, v in zip(calls, idx, verdicts, strict=True))
        )
    )


def _starts_child(st: RunState, call: ToolCallOut) -> bool:
    tool = st.tools.get(call.name)
    return tool is not None and not call.arguments_error and tool.starts_child_for(call.arguments)


async def _one(
    env: CallEnv, st: RunState, call: ToolCallOut, index: int, verdict: Verdict | None
) -> CallResult:
    t0 = _ms()
    span_id = w3c_span_id()  # what the call starts (a child task's run) hangs under this span
    tool = st.tools.get(call.name)
    name = tool.name if tool else call.name
    await st.live("tool.started", {"turn": st.turn, "call_id": call.id, "tool": name})
    try:
        res = await _guarded(env, st, tool, call, index, verdict, span_id)
    except asyncio.CancelledError:  # the run was stopped in this call: its span says so
        attrs: dict[str, Any] = {
            "agen.tool.name": tool.name if tool else call.name,
            "gen_ai.tool.call.id": call.id,
            "agen.turn": st.turn,
        }
        st.add_span(
            "agen.tool",
            "cancelled",
            attrs,
            t0,
            _ms(),
            "the run was stopped during this call",
            span_id,
        )
        raise
    res.tool = tool.name if tool else call.name
    if tool is not None and not res.is_error and res.suspend is None:
        res.content = st.redactor.redact(res.content)
        capped, art = await artifacts.cap_result(
            env.store,
            st.req.namespace,
            tool.name,
            res.content,
            env.max_result_chars,
            st.task_id,
            st.run_id,
        )
        if art is not None:
            res.content = capped
            res.attrs["agen.artifact"] = art
    else:
        res.content = st.redactor.redact(res.content)
    if tool is not None and tool.untrusted_output and st.trust != "untrusted":
        st.trust = "untrusted"
        res.attrs["agen.trust.lowered"] = True
    st.guards.record_call(call.name, call.arguments, res.content if res.is_error else None)
    attrs = {
        "agen.tool.name": res.tool,
        "gen_ai.tool.call.id": call.id,
        "agen.turn": st.turn,
        **res.attrs,
    }
    st.add_span(
        "agen.tool",
        "error" if res.is_error else "ok",
        attrs,
        t0,
        _ms(),
        res.content if res.is_error else None,
        span_id,
    )
    status = "waiting" if res.suspend is not None or res.approval is not None else None
    ended = {"turn": st.turn, "call_id": call.id, "tool": res.tool, "latency_ms": _ms() - t0}
    await st.live(
        "tool.finished", {**ended, "status": status or ("error" if res.is_error else "ok")}
    )
    return res


async def _guarded(
    env: CallEnv,
    st: RunState,
    tool: Tool | None,
    call: ToolCallOut,
    index: int,
    verdict: Verdict | None,
    span_id: str,
) -> CallResult:
    if tool is None:
        names = ", ".join(sorted(st.tools)) or "none"
        inactive = st.catalogue.not_active(call.name) if st.catalogue is not None else None
        return CallResult(
            call,
            index,
            inactive or f"unknown tool {call.name!r}; the tools you can call are: {names}",
            True,
        )
    if call.arguments_error:
        return CallResult(call, index, f"{tool.name}: {call.arguments_error}", True)
    if st.wrap_up is not None and (
        tool.side_effect_for(call.arguments)
        or tool.starts_child_for(call.arguments)
        or (verdict is not None and verdict.decision == "ask")
    ):
        return CallResult(
            call,
            index,
            f"refused: this task is being stopped ({st.wrap_up}) and this is its last turn, so "
            f"{tool.name} was not called; say in finish what is left undone",
            True,
            attrs={"agen.refused": "wrap_up"},
        )
    refused = st.guards.refused(call.name, call.arguments)
    if refused:
        return CallResult(call, index, refused, True, attrs={"agen.guard": "repeated_failure"})
    if verdict is not None and verdict.decision == "deny":
        rule = f" ({verdict.rule})" if verdict.rule else ""
        return CallResult(
            call,
            index,
            f"denied: a permission rule{rule} does not allow {tool.name}",
            True,
            attrs={"agen.permission": "deny"},
        )
    if verdict is not None and verdict.decision == "ask":
        decision = await env.gate.decide(
            ApprovalRequest(
                namespace=st.req.namespace,
                deployment=st.req.deployment,
                run_id=st.run_id,
                task_id=st.task_id,
                call_id=call.id,
                tool=tool.name,
                arguments=st.redactor.redact_obj(call.arguments),
                requested_by=st.req.requested_by,
            )
        )
        if decision.pending is not None:
            return CallResult(
                call,
                index,
                f"waiting for approval {decision.pending}",
                approval=decision.pending,
                attrs={"agen.permission": "ask", "agen.approval": decision.pending},
            )
        if not decision.approved:
            note = f": {decision.note}" if decision.note else ""
            return CallResult(
                call,
                index,
                f"denied by the approver{note}",
                True,
                attrs={"agen.permission": "denied"},
            )
    key = None
    ledger: CallLedger | None = None
    if tool.side_effect_for(call.arguments):
        key = effect_key(st.run_id, st.turn, index, tool.name, call.arguments, tool.idempotent)
        if tool.repeats_started(call.arguments):
            ledger = await _ledger(env, st, key)
        await env.store.write(start_effect(st.run_id, st.epoch, key, tool.name, call.id))
    result = await invoke(tool, call, st, index, span_id, ledger)
    if key is not None:
        await env.store.write(
            complete_effect(
                st.run_id,
                st.epoch,
                key,
                ok=not result.is_error,
                content=st.redactor.redact(result.content),
                is_error=result.is_error,
            )
        )
    out = CallResult(call, index, result.content, result.is_error, result.data, result.suspend)
    if key is not None:
        out.attrs["agen.effect_key"] = key
    return out


async def _ledger(env: CallEnv, st: RunState, key: str) -> CallLedger:
    """A repeatable call's ledger: what an interrupted attempt of it noted (read before this
    attempt's start resets the row), and how to note this attempt's progress."""
    prior = await env.store.scalar(
        "SELECT result FROM effects WHERE run_id = ? AND key = ? AND state = 'started'",
        (st.run_id, key),
    )

    async def record(note: dict[str, Any]) -> None:
        await env.store.write(note_effect(st.run_id, st.epoch, key, note))

    return CallLedger(started_note(prior), record)


async def invoke(
    tool: Tool,
    call: ToolCallOut,
    st: RunState,
    index: int = 0,
    span_id: str | None = None,
    ledger: CallLedger | None = None,
) -> ToolResult:
    """Call the tool; its failures become error results the model reads (cancellation propagates)."""
    ctx = st.tool_context(call.id, index, span_id)
    if ledger is not None:
        ctx.ledger = ledger
    try:
        return await tool.call(call.arguments, ctx)
    except ToolError as e:
        return ToolResult(e.message, is_error=True, suspend=e.suspend)
    except asyncio.CancelledError:
        raise
    except Exception as e:
        return ToolResult(f"{tool.name} failed: {type(e).__name__}: {e}", is_error=True)
