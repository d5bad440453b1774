"""One model turn under the rules of seed 000 §7: retries, fallback models, fallback providers.

The configured model is retried on 429/5xx (honouring Retry-After), then each fallback
model in order. An empty answer is asked again once; an answer cut off at the output limit
with nothing usable is asked again once with twice the limit. Account errors (401/402/403)
end the turn at once unless another provider account is configured; accounts are tried
in order only on account errors. Every call leaves a ``gen_ai.chat`` span.

Every call streams: with a ``publish`` callback, each call's start (``model.started``), the pieces
of its answer (``run.delta``) and its end (``model.finished``) are published live as they happen
(agen.domain.live). A call that breaks off mid-stream and is retried starts again with a new
``model.started``: a watcher drops what it showed of the broken attempt.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from agen.runner.providers import Account
from agen.runner.providers.base import (
    Delta,
    DeltaSink,
    ModelRequest,
    ModelResponse,
    ProviderError,
    WatchedSink,
)
from agen.util.backoff import next_backoff

MAX_BACKOFF_S = 60.0

Publish = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Publishes one live event of the run (its type and data): agen.runner.state.RunState.live."""


@dataclass
class TurnPolicy:
    max_retries: int = 3
    backoff_base_s: float = 0.5
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


@dataclass
class CallSpan:
    """A finished gen_ai.chat span, written with the next checkpoint."""

    started_ms: int
    ended_ms: int
    status: str
    attrs: dict[str, Any]
    error: str | None = None


@dataclass
class TurnAnswer:
    response: ModelResponse
    account: Account
    model_sent: str
    spans: list[CallSpan] = field(default_factory=list)


class TurnFailed(Exception):
    def __init__(
        self, reason: str, message: str, spans: list[CallSpan], account: Account | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason  # no_answer | account_error
        self.message = message
        self.spans = spans
        self.account = account  # the account that refused (account_error): the Hub holds it


def _usable(resp: ModelResponse) -> bool:
    return bool(resp.text.strip()) or any(c.arguments_error is None for c in resp.tool_calls)


def _ms() -> int:
    return time.time_ns() // 1_000_000


def _span(
    t0: int,
    account: Account,
    ai: int,
    mi: int,
    req: ModelRequest,
    attempt: int,
    resp: ModelResponse | None,
    err: ProviderError | None,
) -> CallSpan:
    t1 = _ms()
    attrs: dict[str, Any] = {
        "gen_ai.provider.name": account.label,
        "gen_ai.request.model": req.model,
        "gen_ai.request.max_tokens": req.max_tokens,
        "agen.latency_ms": t1 - t0,
    }
    if attempt:
        attrs["agen.retry"] = attempt
    if mi:
        attrs["agen.fallback"] = req.model
    if ai:
        attrs["agen.fallback_provider"] = account.label
    if req.tier:
        attrs["agen.router.tier"] = req.tier
    if resp is not None:
        u = resp.usage
        attrs.update(
            {
                "gen_ai.response.model": resp.model or req.model,
                "gen_ai.response.finish_reasons": [resp.finish_reason]
                if resp.finish_reason
                else [],
                "gen_ai.usage.input_tokens": u.input_tokens,
                "gen_ai.usage.output_tokens": u.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": u.cached_tokens,
            }
        )
        if u.cache_write_tokens:
            attrs["gen_ai.usage.cache_creation.input_tokens"] = u.cache_write_tokens
        if u.cost_usd is not None:
            attrs["agen.cost_usd"] = u.cost_usd
        attrs.update(resp.attrs)
        return CallSpan(t0, t1, "ok", attrs)
    assert err is not None
    attrs["error.type"] = err.kind if err.status is None else str(err.status)
    return CallSpan(t0, t1, "error", attrs, err.message[:1000])


def _finished(span: CallSpan, turn: int) -> dict[str, Any]:
    a = span.attrs
    data: dict[str, Any] = {
        "turn": turn,
        "model": a.get("gen_ai.response.model") or a.get("gen_ai.request.model"),
        "status": span.status,
        "latency_ms": span.ended_ms - span.started_ms,
    }
    if span.status == "ok":
        data["input_tokens"] = a.get("gen_ai.usage.input_tokens")
        data["output_tokens"] = a.get("gen_ai.usage.output_tokens")
        data["finish_reason"] = (a.get("gen_ai.response.finish_reasons") or [None])[0]
    else:
        data["error"] = span.error
    return data


async def model_turn(
    accounts: list[Account],
    request: ModelRequest,
    policy: TurnPolicy,
    publish: Publish | None = None,
    watched: Callable[[], bool] | None = None,
) -> TurnAnswer:
    """Ask the model(s) for one answer, or raise TurnFailed. ``watched`` says whether anyone reads
    the run's live deltas now (RunState.watched; without it, someone is assumed to)."""
    turn = request.run_turn + 1
    on_delta: DeltaSink | None = None
    if publish is not None:
        live = publish

        async def send(d: Delta) -> None:
            await live("run.delta", {"turn": turn, "text": d.text, "kind": d.kind})

        on_delta = send if watched is None else WatchedSink(send, watched)

    spans: list[CallSpan] = []
    last_problem = "no model answered"
    for ai, account in enumerate(accounts):
        account_error: ProviderError | None = None
        for mi, model in enumerate(account.models):
            req = request if request.model == model else replace(request, model=model)
            asked_empty = asked_cut = False
            attempt, backoff_s = 0, 0.0
            while True:
                t0 = _ms()
                if publish is not None:
                    started = {"turn": turn, "model": model, "provider": account.label}
                    await publish("model.started", {**started, "attempt": attempt})
                try:
                    resp = await account.provider.complete(req, on_delta)
                except ProviderError as e:
                    spans.append(_span(t0, account, ai, mi, req, attempt, None, e))
                    if publish is not None:
                        await publish("model.finished", _finished(spans[-1], turn))
                    if e.kind == "account":
                        account_error = e
                        break
                    if e.kind == "retryable" and attempt < policy.max_retries:
                        backoff_s = next_backoff(backoff_s, policy.backoff_base_s, MAX_BACKOFF_S)
                        delay = e.retry_after_s if e.retry_after_s is not None else backoff_s
                        await policy.sleep(min(delay, MAX_BACKOFF_S))
                        attempt += 1
                        continue
                    last_problem = f"{model}: {e.message}"
                    break
                spans.append(_span(t0, account, ai, mi, req, attempt, resp, None))
                if publish is not None:
                    await publish("model.finished", _finished(spans[-1], turn))
                if resp.cut_off and not _usable(resp):
                    if not asked_cut and req.max_tokens:
                        asked_cut = True
                        req = replace(req, max_tokens=req.max_tokens * 2)
                        continue
                    last_problem = (
                        f"{model}: the answer was cut off at the output limit with nothing usable"
                    )
                    break
                if resp.empty:
                    if not asked_empty:
                        asked_empty = True
                        continue
                    last_problem = f"{model}: the answer was empty twice"
                    break
                return TurnAnswer(resp, account, model, spans)
            if account_error is not None:
                break
        if account_error is None:
            raise TurnFailed("no_answer", f"no model gave an answer ({last_problem})", spans)
        if ai == len(accounts) - 1:
            raise TurnFailed(
                "account_error",
                f"provider account error from {account.label} (HTTP {account_error.status}): {account_error.message}. "
                "Check the API key, credit and permissions of this account",
                spans,
                account,
            )
    raise TurnFailed("no_answer", "no provider is configured", spans)
