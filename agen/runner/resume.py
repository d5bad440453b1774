"""Picking a run up from the Store: history re-read, unanswered tool calls given a result.

A turn that suspended on a pending approval runs its unstarted calls now (in order; each
reads its approval's decision). Otherwise a call whose effect completed gets its recorded
result; a started-but-unconfirmed effect gets ``effect_unknown`` (an idempotent tool runs
again instead, and so does one whose repeat is the same call at the other end, e.g.
call_agent over A2A, which picks its recorded remote task up); a side-effecting call whose effect
was never started runs now: its ledger row is written before it runs, so without one it never
began, and running it resumes the run where it stopped (the turn is durable before any effect
starts, so a crash in between leaves exactly this). Any other call without a result gets a
synthetic error result so the history stays valid. A finish call accepted in the stored turn ends
the run the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agen.runner.context import Msg
from agen.runner.effects import EFFECT_UNKNOWN, Effect, effect_key
from agen.runner.providers.base import ToolCallOut
from agen.runner.tools.base import Tool
from agen.runner.tools.builtin import FINISH

INTERRUPTED = (
    "interrupted: the run stopped before this call to {tool} returned; it was not run again. "
    "Call it again if you still need its result."
)


@dataclass
class Repair:
    """What resuming needs: results to store now, calls to run again, an accepted finish."""

    results: list[tuple[ToolCallOut, str, bool]] = field(
        default_factory=list
    )  # call, content, is_error
    rerun: list[tuple[int, ToolCallOut]] = field(default_factory=list)
    finish_args: dict[str, Any] | None = None
    unknown: list[tuple[ToolCallOut, str]] = field(
        default_factory=list
    )  # effect_unknown: call, effect key


def missing_results(msgs: list[Msg]) -> list[tuple[Msg, list[tuple[int, dict[str, Any]]]]]:
    """For each assistant message with tool calls, the calls (index, call) no tool message answers."""
    answered = {m.tool_call_id for m in msgs if m.role == "tool"}
    out = []
    for m in msgs:
        if m.role == "assistant" and m.tool_calls:
            gaps = [(i, c) for i, c in enumerate(m.tool_calls) if c["id"] not in answered]
            if gaps:
                out.append((m, gaps))
    return out


def patch_history(msgs: list[Msg]) -> list[Msg]:
    """Earlier runs' history with a synthetic result after every unanswered call (in memory only)."""
    gaps = {id(m): g for m, g in missing_results(msgs)}
    if not gaps:
        return msgs
    out: list[Msg] = []
    for m in msgs:
        out.append(m)
        for _i, c in gaps.get(id(m), []):
            out.append(
                Msg(
                    m.seq,
                    m.turn,
                    "tool",
                    INTERRUPTED.format(tool=c["name"]),
                    m.run_id,
                    tool_call_id=c["id"],
                    name=c["name"],
                    is_error=True,
                )
            )
    return out


def accepted_finish(msgs: list[Msg]) -> dict[str, Any] | None:
    """The arguments of a finish call the stored turn accepted (its result is not an error)."""
    ok = {m.tool_call_id for m in msgs if m.role == "tool" and m.name == FINISH and not m.is_error}
    for m in msgs:
        for c in m.tool_calls or []:
            if c["id"] in ok:
                return dict(c.get("arguments") or {})
    return None


def _not_started(
    run_id: str,
    turn: int,
    index: int,
    c: dict[str, Any],
    tools: dict[str, Tool],
    effects: dict[str, Effect],
) -> bool:
    """No effect of this call was recorded: it never began, so running it now runs it once."""
    tool = tools.get(c["name"])
    if tool is None or not tool.side_effect_for(dict(c.get("arguments") or {})):
        return True
    return (
        effect_key(run_id, turn, index, tool.name, dict(c.get("arguments") or {}), tool.idempotent)
        not in effects
    )


def plan_repair(
    run_id: str,
    current: list[Msg],
    tools: dict[str, Tool],
    effects: dict[str, Effect],
    asked: set[str] | frozenset[str] = frozenset(),
) -> Repair:
    """``asked``: ids of calls that requested an approval. A turn that suspended on one kept its
    unstarted calls for later: they run now (each asks its approval again and reads the decision)."""
    rep = Repair(finish_args=accepted_finish(current))
    for msg, gaps in missing_results(current):
        waited = any(c["id"] in asked for _, c in gaps)
        for index, c in gaps:
            if waited and _not_started(run_id, msg.turn, index, c, tools, effects):
                rep.rerun.append(
                    (
                        index,
                        ToolCallOut(
                            id=c["id"], name=c["name"], arguments=dict(c.get("arguments") or {})
                        ),
                    )
                )
                continue
            call = ToolCallOut(id=c["id"], name=c["name"], arguments=dict(c.get("arguments") or {}))
            tool = tools.get(call.name)
            if tool is None or not tool.side_effect_for(call.arguments):
                if tool is not None and (tool.name == FINISH or tool.read_only or tool.resumable):
                    rep.rerun.append((index, call))
                else:
                    rep.results.append((call, INTERRUPTED.format(tool=call.name), True))
                continue
            key = effect_key(run_id, msg.turn, index, tool.name, call.arguments, tool.idempotent)
            eff = effects.get(key)
            if eff is not None and eff.state in ("completed", "failed") and eff.result is not None:
                rep.results.append(
                    (call, str(eff.result.get("content", "")), bool(eff.result.get("is_error")))
                )
            elif eff is not None and (tool.idempotent or tool.repeats_started(call.arguments)):
                rep.rerun.append((index, call))
            elif eff is not None:
                rep.results.append((call, EFFECT_UNKNOWN.format(tool=tool.name), True))
                rep.unknown.append((call, key))
            else:  # no ledger row: the call never began, so running it now runs it once
                rep.rerun.append((index, call))
    return rep
