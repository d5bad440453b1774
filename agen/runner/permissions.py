"""The bundle's permission rules as the runner's ToolPolicy (seed 000 §7, Permissions and Trust).

Rules are checked deny, then ask, then allow; the first whose tool glob matches (by
registered ``server.tool`` or wire ``server_tool`` name) and whose ``when`` conditions
all hold decides; otherwise ``permissions.default`` (ask). A task's overrides only
narrow: its tool allowlist hides the rest, its deny/ask globs come before the bundle's.
``rate`` counts calls of the tool durably in the Store, so a restart does not reset it.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agen.bundle._base import window_minutes
from agen.bundle.overrides import TRUST_RANK, TaskOverrides
from agen.bundle.permissions import Permissions, RuleObject, When
from agen.runner.policy import Decision, ToolPolicy, Verdict
from agen.runner.tools.base import Tool, ToolContext
from agen.store.base import Store, Tx
from agen.store.pg_locks import lock_keys
from agen.util.duration import parse_duration_ms

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class Rule:
    decision: Decision
    glob: str
    when: When | None
    label: str  # how the rule is named in verdicts: "deny[0]", "override deny[1]"

    def names_tool(self, tool: Tool) -> bool:
        return fnmatch.fnmatchcase(tool.name, self.glob) or fnmatch.fnmatchcase(
            tool.wire_name, self.glob
        )


def _rules(decision: Decision, raw: list[str | RuleObject], prefix: str = "") -> list[Rule]:
    out = []
    for i, r in enumerate(raw):
        glob, when = (r, None) if isinstance(r, str) else (r.tool, r.when)
        out.append(Rule(decision, glob, when, f"{prefix}{decision}[{i}] {glob}"))
    return out


@dataclass(frozen=True)
class Call:
    """What a rule's conditions are evaluated against."""

    tool: Tool
    args: Mapping[str, Any]
    trust: str
    labels: Mapping[str, str]
    now_ms: int


def args_match(cond: Mapping[str, Any], args: Mapping[str, Any]) -> bool:
    """Every named argument must match: a comparison, a glob string, or an exact value."""
    for name, want in cond.items():
        if name not in args:
            return False
        got = args[name]
        if isinstance(want, dict):
            if isinstance(got, bool) or not isinstance(got, int | float):
                return False
            ops: dict[str, Callable[[float, float], bool]] = {
                "lt": lambda a, b: a < b,
                "lte": lambda a, b: a <= b,
                "gt": lambda a, b: a > b,
                "gte": lambda a, b: a >= b,
            }
            if not all(ops[op](got, bound) for op, bound in want.items()):
                return False
        elif isinstance(want, str) and isinstance(got, str):
            if not fnmatch.fnmatchcase(got, want):
                return False
        elif want != got or isinstance(want, bool) != isinstance(got, bool):
            return False
    return True


def time_match(window: str, days: Sequence[str] | None, now_ms: int) -> bool:
    """Inside the daily UTC window (an end before the start wraps past midnight), on a listed day."""
    now = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    minute = now.hour * 60 + now.minute
    start, end = window_minutes(window)
    day = now.weekday()
    if start < end:
        inside = start <= minute < end
    else:
        inside = minute >= start or minute < end
        if inside and minute < end:
            day = (day - 1) % 7  # the early-morning part belongs to the window that began yesterday
    return inside and (not days or _DAYS[day] in days)


class BundlePolicy(ToolPolicy):
    """config.json permissions plus a task's narrowing overrides, with durable rate counters."""

    def __init__(
        self,
        permissions: Permissions,
        overrides: TaskOverrides | None = None,
        *,
        store: Store | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self._permissions = permissions
        self.default: Decision = permissions.default
        ov = overrides or TaskOverrides()
        self.allowlist = ov.tools
        self.rules = [
            *[Rule("deny", g, None, f"task override deny {g}") for g in ov.deny],
            *_rules("deny", permissions.deny),
            *[Rule("ask", g, None, f"task override ask {g}") for g in ov.ask],
            *_rules("ask", permissions.ask),
            *_rules("allow", permissions.allow),
        ]
        self.store = store
        self.clock = clock or (lambda: time.time_ns() // 1_000_000)
        self._memory_calls: dict[tuple[str, str, str], list[int]] = {}

    def for_task(self, overrides: TaskOverrides | None) -> BundlePolicy:
        """The same bundle rules narrowed by one task's overrides (sharing the rate counters)."""
        narrowed = BundlePolicy(self._permissions, overrides, store=self.store, clock=self.clock)
        narrowed._memory_calls = self._memory_calls
        return narrowed

    def visible(self, tool: Tool) -> bool:
        if tool.bypass_permissions:
            return True
        if self.allowlist is not None and not any(
            fnmatch.fnmatchcase(tool.name, g) or fnmatch.fnmatchcase(tool.wire_name, g)
            for g in self.allowlist
        ):
            return False
        if any(r.decision == "deny" and r.when is None and r.names_tool(tool) for r in self.rules):
            return False
        if self.default == "deny":  # nothing but conditional denies/defaults could let it through
            return any(r.decision != "deny" and r.names_tool(tool) for r in self.rules)
        return True

    async def check(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Verdict:
        if tool.bypass_permissions:
            return Verdict("allow")
        if not self.visible(tool):
            return Verdict(
                "deny", "not in the task's tool list" if self.allowlist is not None else None
            )
        call = Call(tool, args, ctx.trust, ctx.labels, self.clock())
        candidates = [r for r in self.rules if r.names_tool(tool)]
        if not any(r.when is not None and r.when.rate is not None for r in candidates):
            return self._decide(candidates, call, lambda _per: 0)
        key = (ctx.namespace, ctx.deployment, tool.name)
        longest = max(
            parse_duration_ms(r.when.rate.per) for r in candidates if r.when and r.when.rate
        )
        if self.store is None:
            return self._check_in_memory(candidates, call, key, longest)
        return await self.store.write(
            lambda tx: self._check_durable(tx, candidates, call, key, ctx.run_id, longest)
        )

    def _decide(self, rules: list[Rule], call: Call, count_within: Callable[[int], int]) -> Verdict:
        for rule in rules:
            if rule.when is None or self._holds(rule.when, call, count_within):
                return Verdict(rule.decision, rule.label)
        return Verdict(self.default, "default")

    def _holds(self, w: When, call: Call, count_within: Callable[[int], int]) -> bool:
        rank = TRUST_RANK.get(call.trust, 0)
        if w.trust is not None and call.trust != w.trust:
            return False
        if w.trust_below is not None and not rank < TRUST_RANK[w.trust_below]:
            return False
        if w.labels and any(call.labels.get(k) != v for k, v in w.labels.items()):
            return False
        if w.args is not None and not args_match(w.args, call.args):
            return False
        if w.time is not None and not time_match(w.time.window, w.time.days, call.now_ms):
            return False
        return not (
            w.rate is not None and count_within(parse_duration_ms(w.rate.per)) >= w.rate.max
        )

    def _check_durable(
        self,
        tx: Tx,
        rules: list[Rule],
        call: Call,
        key: tuple[str, str, str],
        run_id: str,
        longest: int,
    ) -> Verdict:
        ns, dep, name = key
        lock_keys(
            tx, f"tool-rate:{ns}:{dep}:{name}"
        )  # counted, then recorded: one call at a time decides

        def count_within(per_ms: int) -> int:
            return int(
                tx.scalar(
                    "SELECT COUNT(*) FROM tool_rate_calls WHERE namespace = ? AND deployment = ? AND tool = ?"
                    " AND created_ms > ?",
                    (ns, dep, name, call.now_ms - per_ms),
                )
            )

        verdict = self._decide(rules, call, count_within)
        tx.execute(
            "DELETE FROM tool_rate_calls WHERE namespace = ? AND deployment = ? AND tool = ? AND created_ms <= ?",
            (ns, dep, name, call.now_ms - longest),
        )
        if verdict.decision != "deny":
            tx.execute(
                "INSERT INTO tool_rate_calls (namespace, deployment, tool, run_id, created_ms) VALUES (?, ?, ?, ?, ?)",
                (ns, dep, name, run_id, call.now_ms),
            )
        return verdict

    def _check_in_memory(
        self, rules: list[Rule], call: Call, key: tuple[str, str, str], longest: int
    ) -> Verdict:
        times = [t for t in self._memory_calls.get(key, []) if t > call.now_ms - longest]
        verdict = self._decide(
            rules, call, lambda per: sum(1 for t in times if t > call.now_ms - per)
        )
        if verdict.decision != "deny":
            times.append(call.now_ms)
        self._memory_calls[key] = times
        return verdict
