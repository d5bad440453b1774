"""Run a scenario's checks against a result: a score (0.0-1.0) and a verdict per check.

Deterministic checks answer from the result; ``rubric`` asks the judge (``Judge``: the bundle's
provider, built once per eval and shared); ``custom`` imports and calls a function. A check that
cannot be evaluated (a judge that fails, an evaluator that raises) fails with the reason.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agen.bundle.scenario import subset, wire
from agen.bundle.scenario_checks import (
    CalledCheck,
    CalledInOrderCheck,
    Check,
    CustomCheck,
    LimitsCheck,
    NumberCheck,
    RegexCheck,
    RubricCheck,
    label,
)
from agen.evals.context import EvalContext, EvalResult
from agen.evals.paths import json_path


@dataclass
class CheckResult:
    """What one check concluded: score, verdict, and why (the judge's reasoning for a rubric)."""

    check: str  # its type
    name: str
    score: float
    passed: bool
    reason: str = ""
    turn: int | None = None  # the user message it ran after (multi-turn); None: at the end
    weight: float = 1.0
    judge: dict[str, Any] | None = None  # rubric: model, tokens, cost of the judge's call

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "check": self.check,
            "name": self.name,
            "score": round(self.score, 4),
            "passed": self.passed,
            "reason": self.reason,
        }
        if self.turn is not None:
            out["turn"] = self.turn
        if self.judge is not None:
            out["judge"] = self.judge
        return out


@dataclass
class Judge:
    """The model that grades rubric checks: the bundle's own provider accounts, built on first use."""

    bundle: Any  # agen.bundle.Bundle
    _accounts: list[Any] | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def accounts(self) -> list[Any]:
        async with self._lock:
            if self._accounts is None:
                from agen.runner.providers import build_accounts

                self._accounts = await build_accounts(self.bundle)
            return self._accounts


def _result(c: Check, score: float, passed: bool, reason: str, turn: int | None) -> CheckResult:
    return CheckResult(c.type, label(c), score, passed, reason, turn, c.weight)


def _binary(c: Check, ok: bool, why_not: str, turn: int | None) -> CheckResult:
    return _result(c, 1.0 if ok else 0.0, ok, "" if ok else why_not, turn)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def check_number(c: NumberCheck, ctx: EvalContext, turn: int | None) -> CheckResult:
    found, value = json_path(ctx.data, c.path)
    n = _number(value) if found else None
    if n is None:
        shown = json.dumps(value, ensure_ascii=False)[:80] if found else "missing"
        return _binary(c, False, f"{c.path} is {shown}, not a number", turn)
    bounds = [
        ("<", c.lt, n < (c.lt or 0)),
        ("<=", c.lte, n <= (c.lte or 0)),
        (">", c.gt, n > (c.gt or 0)),
        (">=", c.gte, n >= (c.gte or 0)),
        ("==", c.eq, n == c.eq),
    ]
    broken = [f"{op} {b:g}" for op, b, ok in bounds if b is not None and not ok]
    return _binary(c, not broken, f"{c.path} is {n:g}, not {' and '.join(broken)}", turn)


def check_regex(c: RegexCheck, ctx: EvalContext, turn: int | None) -> CheckResult:
    if c.path is None:
        text, where = ctx.summary, "the summary"
    else:
        found, value = json_path(ctx.data, c.path)
        if not found:
            return _binary(c, c.absent, f"{c.path} is missing", turn)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        where = c.path
    hit = re.search(c.pattern, text, re.IGNORECASE if c.ignore_case else 0) is not None
    if c.absent:
        return _binary(c, not hit, f"{where} matches /{c.pattern}/", turn)
    return _binary(c, hit, f"{where} does not match /{c.pattern}/: {text[:120]!r}", turn)


def check_in_order(c: CalledInOrderCheck, ctx: EvalContext, turn: int | None) -> CheckResult:
    called = [x.name for x in ctx.calls]
    at = 0
    for name in c.names:
        try:
            at = called.index(wire(name), at) + 1
        except ValueError:
            return _binary(
                c,
                False,
                f"{name} was not called after {' → '.join(c.names[: c.names.index(name)]) or 'the start'}"
                f" (calls: {', '.join(called) or 'none'})",
                turn,
            )
    return _binary(c, True, "", turn)


def check_called(c: CalledCheck, ctx: EvalContext, turn: int | None) -> CheckResult:
    same = [x for x in ctx.calls if x.name == wire(c.tool)]
    hits = [x for x in same if c.args is None or subset(c.args, x.arguments)]
    args = f" with {json.dumps(c.args, ensure_ascii=False)}" if c.args is not None else ""
    if c.times is not None:
        return _binary(
            c,
            len(hits) == c.times,
            f"{c.tool} was called{args} {len(hits)} times, not {c.times}",
            turn,
        )
    seen = "; its calls had " + "; ".join(
        json.dumps(x.arguments, ensure_ascii=False)[:120] for x in same[:3]
    )
    return _binary(c, bool(hits), f"{c.tool} was not called{args}" + (seen if same else ""), turn)


def check_limits(c: LimitsCheck, ctx: EvalContext, turn: int | None) -> CheckResult:
    over = []
    if c.max_duration_ms is not None and ctx.duration_ms > c.max_duration_ms:
        over.append(f"took {ctx.duration_ms} ms > {c.max_duration_ms}")
    if c.max_tokens is not None and ctx.tokens > c.max_tokens:
        over.append(f"used {ctx.tokens} tokens > {c.max_tokens}")
    if c.max_cost_usd is not None and ctx.cost_usd > c.max_cost_usd:
        over.append(f"cost ${ctx.cost_usd:.4f} > ${c.max_cost_usd:.4f}")
    if c.max_turns is not None and ctx.model_turns > c.max_turns:
        over.append(f"took {ctx.model_turns} model turns > {c.max_turns}")
    return _binary(c, not over, "; ".join(over), turn)


def load_function(spec: str, root: Path | None) -> Any:
    """``module:function``, imported with ``root`` (the bundle folder) first on sys.path. A module
    of that name already imported from elsewhere (another bundle's evaluator of the same name, as
    in ``agen eval compare`` of two versions) is imported again from ``root``."""
    module, _, name = spec.partition(":")
    if root is not None:
        here = str(root.resolve())
        if here in sys.path:
            sys.path.remove(here)
        sys.path.insert(0, here)
        top = module.split(".")[0]
        mine = (root / f"{top}.py").is_file() or (root / top / "__init__.py").is_file()
        loaded = sys.modules.get(top)
        where = str(getattr(loaded, "__file__", "") or "")
        if mine and loaded is not None and not where.startswith(here + os.sep):
            for key in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
                del sys.modules[key]
            importlib.invalidate_caches()
    mod = importlib.import_module(module)
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise ValueError(f"{module} has no function {name}")
    return fn


async def check_custom(
    c: CustomCheck, ctx: EvalContext, turn: int | None, root: Path | None
) -> CheckResult:
    try:
        fn = load_function(c.function, root)
        got = fn(EvalContext(**{**ctx.__dict__, "args": dict(c.args)}))
        if inspect.isawaitable(got):
            got = await got
    except Exception as e:  # an evaluator's own bug fails its check, never the eval
        return _result(c, 0.0, False, f"{c.function} raised {type(e).__name__}: {e}", turn)
    if isinstance(got, bool):
        return _binary(c, got, f"{c.function} returned False", turn)
    if isinstance(got, int | float):
        got = EvalResult(float(got))
    if not isinstance(got, EvalResult):
        return _result(
            c, 0.0, False, f"{c.function} returned {type(got).__name__}, not a score", turn
        )
    if math.isnan(got.score) or not 0.0 <= got.score <= 1.0:
        return _result(
            c, 0.0, False, f"{c.function} returned score {got.score}, outside 0.0-1.0", turn
        )
    passed = got.passed if got.passed is not None else got.score >= c.threshold
    reason = got.reason or ("" if passed else f"score {got.score:.2f} < threshold {c.threshold}")
    return _result(c, got.score, passed, reason, turn)


async def check_rubric(
    c: RubricCheck, ctx: EvalContext, turn: int | None, judge: Judge
) -> CheckResult:
    from agen.runner.grader import RecordedCall, grade, record_text
    from agen.runner.turn import TurnFailed, TurnPolicy

    record = record_text(
        ctx.input,
        [RecordedCall(x.name, x.arguments, x.result, x.is_error) for x in ctx.calls],
        ctx.summary,
        ctx.data,
    )
    try:
        accounts = await judge.accounts()
        graded = await grade(
            accounts,
            TurnPolicy(max_retries=judge.bundle.harness.max_retries),
            rubric=c.rubric,
            description=c.description,
            record=record,
            model=c.model,
            max_tokens=c.max_tokens,
        )
    except TurnFailed as e:
        return _result(c, 0.0, False, f"the judge did not answer: {e.message}", turn)
    v, resp = graded.verdict, graded.answer.response
    score = v.score
    passed = score >= c.threshold
    why = v.feedback or ("satisfied" if v.satisfied else "not satisfied")
    out = _result(c, score, passed, f"grade {score:.2f} (threshold {c.threshold}): {why}", turn)
    out.judge = {
        "model": resp.model or graded.answer.model_sent,
        "satisfied": v.satisfied,
        "inputTokens": resp.usage.input_tokens,
        "outputTokens": resp.usage.output_tokens,
        "costUsd": resp.usage.cost_usd or 0.0,
    }
    return out


async def run_checks(
    checks: list[Check],
    ctx: EvalContext,
    turn: int | None,
    *,
    judge: Judge,
    root: Path | None,
) -> list[CheckResult]:
    out: list[CheckResult] = []
    for c in checks:
        if isinstance(c, RubricCheck):
            out.append(await check_rubric(c, ctx, turn, judge))
        elif isinstance(c, CustomCheck):
            out.append(await check_custom(c, ctx, turn, root))
        elif isinstance(c, RegexCheck):
            out.append(check_regex(c, ctx, turn))
        elif isinstance(c, NumberCheck):
            out.append(check_number(c, ctx, turn))
        elif isinstance(c, CalledInOrderCheck):
            out.append(check_in_order(c, ctx, turn))
        elif isinstance(c, CalledCheck):
            out.append(check_called(c, ctx, turn))
        else:
            out.append(check_limits(c, ctx, turn))
    return out


def scenario_score(results: list[CheckResult]) -> float:
    """The weighted mean of the checks' scores (1.0 with nothing to check)."""
    total = sum(r.weight for r in results)
    if not results or total == 0:
        return 1.0 if all(r.passed for r in results) else 0.0
    return sum(r.score * r.weight for r in results) / total
