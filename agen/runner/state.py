"""A run in progress: its ids, context, budget, and the writes waiting for the next checkpoint.

Messages, spans and usage accumulate here and go to the Store in one epoch-checked
transaction per step (``flush``), which keeps the hot path at one write per turn.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agen.domain.feedback import insert_feedback
from agen.domain.live import BUS, LiveBus, LiveEvent
from agen.otel.ids import traceparent
from agen.runner.budgets import Budget, Guards
from agen.runner.context import Context, Msg
from agen.runner.providers.base import ModelUsage
from agen.runner.records import Checkpoint, write_checkpoint
from agen.runner.redact import Redactor, StreamRedactor
from agen.runner.tools.base import Tool, ToolContext
from agen.runner.tools.catalogue import Catalogue
from agen.runner.types import RunRequest
from agen.store.base import Store, Tx, dumps, new_ulid, now_ms

EventSink = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class RunState:
    req: RunRequest
    run_id: str
    conversation_id: str
    root_run_id: str
    trace_id: str
    span_id: str
    epoch: int
    started_ms: int
    seq: int
    ctx: Context
    budget: Budget
    guards: Guards
    tools: dict[str, Tool]
    specs: list[dict[str, Any]]
    redactor: Redactor
    trust: str = "trusted"
    turn: int = 0
    turn_children: int = 1  # child tasks the turn's calls start (set before they run)
    wrap_up: str | None = None  # a wrap-up request arrived (cancelled, interrupted): one last turn
    resumed: bool = False
    events: EventSink | None = None
    bus: LiveBus | None = BUS  # where the run's live events go (agen.domain.live)
    cancel: asyncio.Event | None = None
    workspace: str | None = None  # the task workspace (agen/runner/workspace.py), passed in _meta
    sections: Callable[[], Awaitable[str]] | None = (
        None  # per-model-call system prompt text (memory)
    )
    messages: list[tuple[Any, ...]] = field(default_factory=list)
    spans: list[tuple[Any, ...]] = field(default_factory=list)
    usage: list[tuple[Any, ...]] = field(default_factory=list)
    tokens: list[int] = field(default_factory=lambda: [0, 0, 0])
    cost: float = 0.0
    model: str | None = None
    artifacts: list[str] = field(default_factory=list)
    # the model call's delta streams (text, thinking), each masking secrets across its chunks
    streams: dict[str, StreamRedactor] = field(default_factory=dict)
    catalogue: Catalogue | None = (
        None  # the MCP tool catalogue, when the run's tools load on demand
    )
    held: bool = False  # the task was paused, as of the run's last transaction (open or checkpoint)
    inbox: bool = True  # the task may have inbox rows to drain, as of the same (False: none)
    rollover_failed_through: int = 0  # the newest seq rollover failed to summarise (not retried)
    digest: str | None = None  # the bundle definition this run runs (copied onto feedback rows)
    feedback: list[tuple[str, float, str | None, dict[str, str]]] = field(default_factory=list)

    @property
    def task_id(self) -> str | None:
        return self.req.task_id

    @functools.cached_property
    def day(self) -> str:
        # isoformat, not strftime("%Y-%m-%d"): the same text, without strftime's cost (~3 % of the
        # event loop's time per task in py-spy samples of the in-process pipeline)
        return (
            datetime.datetime.fromtimestamp(self.started_ms / 1000, datetime.UTC).date().isoformat()
        )

    def tool_context(self, call_id: str, index: int = 0, span_id: str | None = None) -> ToolContext:
        """``span_id``: the call's own span, allocated before it runs, so what the call starts (a
        child task's run) continues the trace under it."""
        r = self.req
        return ToolContext(
            namespace=r.namespace,
            deployment=r.deployment,
            run_id=self.run_id,
            root_run_id=self.root_run_id,
            conversation_id=self.conversation_id,
            task_id=r.task_id,
            conversation_key=r.conversation_key,
            labels=dict(r.labels),
            trust=self.trust,
            locks=r.locks,  # shared: a lock acquired mid-run shows in later calls' _meta
            workspace=self.workspace,
            traceparent=traceparent(self.trace_id, span_id or self.span_id),
            turn=self.turn,
            call_id=call_id,
            call_index=index,
            turn_children=self.turn_children,
            cancel=self.cancel,
            depth=r.depth,
            parent_run_id=r.parent_run_id,
            time_left_s=self.budget.time_left_s(),
        )

    def add_feedback(self, by: str, score: float, note: str | None, labels: dict[str, str]) -> None:
        """A judgement on this run (the reviewer's grade), written with the next checkpoint."""
        self.feedback.append((by, score, self.redactor.redact(note) if note else note, labels))

    def add_message(
        self,
        role: str,
        content: str | None,
        *,
        turn: int | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        tool_call_id: str | None = None,
        name: str | None = None,
        is_error: bool = False,
        model: str | None = None,
        usage: ModelUsage | None = None,
        raw: dict[str, Any] | None = None,
        thinking: list[dict[str, Any]] | None = None,
    ) -> Msg:
        red = self.redactor
        content = red.redact(content) if content else content
        if tool_calls:
            tool_calls = red.redact_obj(tool_calls)
        t = self.turn if turn is None else turn
        msg = Msg(
            self.seq,
            t,
            role,
            content,
            self.run_id,
            tool_calls,
            tool_call_id,
            name,
            is_error,
            model,
            thinking,  # unredacted: the provider checks its signature (the stored raw is redacted)
        )
        self.ctx.add(msg)
        self.messages.append(
            (
                new_ulid(),
                self.conversation_id,
                self.run_id,
                self.seq,
                t,
                role,
                content,
                dumps(tool_calls) if tool_calls else None,
                tool_call_id,
                name,
                int(is_error),
                model,
                dumps(usage.__dict__) if usage else None,
                dumps(red.redact_obj(raw)) if raw else None,
                now_ms(),
            )
        )
        self.seq += 1
        return msg

    def add_span(
        self,
        name: str,
        status: str,
        attrs: dict[str, Any],
        started_ms: int,
        ended_ms: int,
        error: str | None = None,
        span_id: str | None = None,
    ) -> None:
        err = self.redactor.redact(error)[:1000] if error else None
        r = self.req
        self.spans.append(
            (
                span_id or new_ulid(),
                self.trace_id,
                self.span_id,
                self.run_id,
                r.task_id,
                r.namespace,
                r.deployment,
                name,
                status,
                dumps(attrs),
                err,
                started_ms,
                ended_ms,
            )
        )

    def add_usage(self, provider: str, model: str, u: ModelUsage) -> None:
        r = self.req
        self.usage.append(
            (
                new_ulid(),
                self.run_id,
                r.task_id,
                r.namespace,
                r.deployment,
                provider,
                model,
                u.input_tokens,
                u.output_tokens,
                u.cached_tokens,
                u.cost_usd,
                self.day,
                now_ms(),
            )
        )
        self.tokens[0] += u.input_tokens
        self.tokens[1] += u.output_tokens
        self.tokens[2] += u.cached_tokens
        self.cost += u.cost_usd or 0.0
        self.model = model
        self.budget.add(u)

    async def flush(
        self,
        store: Store,
        *,
        status: str | None = None,
        outcome: dict[str, Any] | None = None,
        also: Callable[[Tx], None] | None = None,
    ) -> None:
        """Checkpoint: everything pending in one transaction that checks the epoch (``also``: one more
        write that must land with it, e.g. claiming the inbox rows these messages came from)."""
        cp = Checkpoint(
            run_id=self.run_id,
            epoch=self.epoch,
            conversation_id=self.conversation_id,
            turns=self.turn,
            next_seq=self.seq,
            messages=self.messages,
            spans=self.spans,
            usage=self.usage,
            input_tokens=self.tokens[0],
            output_tokens=self.tokens[1],
            cached_tokens=self.tokens[2],
            cost_usd=self.cost,
            model=self.model,
            task_id=self.req.task_id,
            keyed=bool(self.req.conversation_key),
        )
        if status is not None:
            cp.status, cp.outcome = status, outcome
            cp.span_id, cp.span_status = self.span_id, _span_status(status)
            r = self.req
            cp.event = (
                r.namespace,
                r.deployment,
                r.task_id,
                {
                    "status": status,
                    "outcome": (outcome or {}).get("status"),
                    "reason": (outcome or {}).get("reason"),
                },
            )

        feedback, r = self.feedback, self.req

        def fn(tx: Tx) -> tuple[bool, bool]:
            if also is not None:
                also(tx)
            for by, score, note, labels in feedback:
                insert_feedback(
                    tx,
                    namespace=r.namespace,
                    deployment=r.deployment,
                    run_id=self.run_id,
                    task_id=r.task_id,
                    digest=self.digest,
                    score=score,
                    note=note,
                    labels=labels,
                    by=by,
                    created_ms=tx.now_ms,
                )
            return write_checkpoint(tx, cp)

        self.held, self.inbox = await store.write(fn)
        self.messages, self.spans, self.usage, self.feedback = [], [], [], []
        self.tokens = [0, 0, 0]
        self.cost = 0.0

    async def emit(self, event: dict[str, Any]) -> None:
        if self.events is not None:
            await self.events(event)

    def watched(self) -> bool:
        """Whether anyone reads this run's live deltas now: the run's own event sink (the SDK), or
        a subscriber of the bus that takes them."""
        if self.events is not None:
            return True
        if self.bus is None:
            return False
        r = self.req
        probe = LiveEvent("run.delta", r.namespace, r.deployment, self.run_id, r.task_id, {}, 0)
        return self.bus.wants(probe)

    async def live(self, kind: str, data: dict[str, Any]) -> None:
        """A live event (agen.domain.live: a delta, a model or tool call's start or end): to this
        process's bus, and to the run's own event sink (the SDK). Deltas are
        redacted as a stream (a secret split across chunks is still masked, its start held back
        until it is known not to be one), and the held-back tail goes out before the call's end."""
        if kind == "run.delta":
            stream = self.streams.get(data["kind"])
            if stream is None:
                stream = self.streams[data["kind"]] = StreamRedactor(self.redactor)
            text = stream.feed(data["text"])
            if not text:
                return
            data = {**data, "text": text}
        elif kind in ("model.started", "model.finished") and self.streams:
            streams, self.streams = self.streams, {}
            for what, stream in streams.items():
                rest = stream.flush()
                if rest:
                    await self._publish(
                        "run.delta", {"turn": data["turn"], "text": rest, "kind": what}
                    )
        await self._publish(kind, data)

    async def _publish(self, kind: str, data: dict[str, Any]) -> None:
        bus = self.bus
        if bus is not None:
            r = self.req
            bus.publish(
                LiveEvent(kind, r.namespace, r.deployment, self.run_id, r.task_id, data, now_ms())
            )
        if self.events is not None:
            await self.events({"type": kind, **data})


def _span_status(run_status: str) -> str:
    return {"succeeded": "ok", "cancelled": "cancelled"}.get(run_status, "error")


def call_dicts(calls: list[Any]) -> list[dict[str, Any]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]
