"""Built-in delegation tools: call_agent, start_agent, query_agent, signal_agent, and the mid-run
locks acquire_lock/release_lock (seed 000 §5, §6).

Every child is a task the Hub stores through its normal submission path, keyed by the call
(``call:<run>.<step>.<call>`` / ``start:<run>.<step>.<call>``), so a retried or resumed call
finds the same child instead of starting another. call_agent waits for its child in place up
to limits.inlineWait, then suspends the whole run (no lease, no slot) on ``child:<id>``; the
resumed run runs the same call again, which finds the child ended and answers with its outcome.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from agen.bundle.config import DEFAULT_MAX_DELEGATION_DEPTH, Delegate
from agen.errors import AgenError, UnavailableError
from agen.runner.delegation import ChildSpec, ChildState, DelegationPort, outcome_text
from agen.runner.tools.a2a_call import A2AFailure, call_a2a
from agen.runner.tools.base import Tool, ToolContext, ToolError, ToolResult

log = logging.getLogger(__name__)
WAIT_STEP_S = 60.0  # the Hub answers a wait at least this often (WaitChildTask's cap)
NO_HUB = (
    "{tool} needs the Hub: it works for a deployment's task on the inproc backend (agen up, "
    "agen run); an embedded (SDK) run or a process-backend instance cannot delegate yet"
)


def call_key(prefix: str, ctx: ToolContext) -> str:
    return f"{prefix}:{ctx.run_id}.{ctx.turn}.{ctx.call_index}"


class _PortTool(Tool):
    """A tool that reaches the Hub through the run's delegation port. Unlike finish and the artifact
    tools these act on the world (they start, steer and lock other agents' work), so they obey the
    bundle's permission rules and the task's tool list like any tool: a bundle may ``ask`` before
    delegating, or deny it (seed 000 exempts only finish and the artifact tools)."""

    def __init__(self, port: DelegationPort | None) -> None:
        self.port = port

    def _need(self, ctx: ToolContext) -> tuple[DelegationPort, str]:
        if self.port is None or ctx.task_id is None:
            raise ToolError(NO_HUB.format(tool=self.name))
        return self.port, ctx.task_id


class _DelegateTool(_PortTool):
    """call_agent and start_agent: a named delegate of the bundle, an input, a child task."""

    def __init__(self, port: DelegationPort | None, delegates: Sequence[Delegate]) -> None:
        super().__init__(port)
        self.delegates = {d.name: d for d in delegates}
        listing = "; ".join(
            f"{d.name}: {d.description}" if d.description else d.name for d in delegates
        )
        self.description = f"{self.description} Agents: {listing}."

    def _delegate(self, args: dict[str, Any]) -> Delegate:
        name = str(args.get("agent") or "")
        d = self.delegates.get(name)
        if d is None:
            known = ", ".join(sorted(self.delegates)) or "none"
            raise ToolError(
                f"no delegate named {name!r}; the agents you can delegate to are: {known}"
            )
        return d

    def _spec(
        self,
        args: dict[str, Any],
        ctx: ToolContext,
        key: str,
        *,
        overrides: dict[str, Any] | None = None,
        reply_key: str | None = None,
    ) -> ChildSpec:
        d = self._delegate(args)
        text = args.get("input")
        if not isinstance(text, str) or not text.strip():
            raise ToolError("input is required: the task for the other agent, in plain words")
        assert ctx.task_id is not None
        return ChildSpec(
            parent_task_id=ctx.task_id,
            deployment=d.name,
            namespace=d.namespace or ctx.namespace,
            input=text,
            call_key=key,
            trust=ctx.trust,
            overrides=overrides,
            traceparent=ctx.traceparent,
            reply_conversation_key=reply_key,
            siblings=ctx.turn_children,
        )

    def starts_child_for(self, args: dict[str, Any]) -> bool:
        d = self.delegates.get(str(args.get("agent") or ""))
        return d is not None and not _over_a2a(d)

    async def _submit(self, port: DelegationPort, spec: ChildSpec) -> ChildState:
        try:
            return await port.submit_child(spec)
        except AgenError as e:
            raise ToolError(f"{self.name} refused: {e.message}") from None


class CallAgentTool(_DelegateTool):
    name = "call_agent"
    description = (
        "Hand a task to another agent and get its answer as this call's result (it may take a "
        "while; this run pauses meanwhile)."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "the delegate's name"},
            "input": {"type": "string", "description": "what the other agent should do"},
        },
        "required": ["agent", "input"],
    }
    resumable = True

    def __init__(
        self,
        port: DelegationPort | None,
        delegates: Sequence[Delegate],
        inline_wait_ms: int,
        max_depth: int = DEFAULT_MAX_DELEGATION_DEPTH,
    ) -> None:
        super().__init__(port, delegates)
        self.inline_wait_s = inline_wait_ms / 1000
        self.max_depth = max_depth

    def side_effect_for(self, args: dict[str, Any]) -> bool:
        """A call over A2A reaches outside the platform: it goes through the effect ledger, so a
        crash mid-call reports effect_unknown instead of sending it twice. A child task is keyed
        by the Hub instead (``resumable``)."""
        d = self.delegates.get(str(args.get("agent") or ""))
        return d is not None and _over_a2a(d)

    def repeats_started(self, args: dict[str, Any]) -> bool:
        """An A2A call interrupted mid-way is picked up on resume, never sent as a new message:
        the remote task it recorded is polled, or the message goes again with the same id (an
        agen Gateway runs a repeated message id as the same task, seed 000 §6)."""
        return self.side_effect_for(args)

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        d = self._delegate(args)
        if _over_a2a(d):
            return await call_over_a2a(d, args, ctx, self.max_depth, self.port)
        port, task_id = self._need(ctx)
        child = await self._submit(port, self._spec(args, ctx, call_key("call", ctx)))
        deadline = time.monotonic() + self.inline_wait_s
        while not child.ended:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ToolError(
                    f"waiting for child task {child.id} ({child.deployment})",
                    suspend=f"child:{child.id}",
                )
            try:
                child = await port.wait_child(task_id, child.id, min(left, WAIT_STEP_S))
            except AgenError as e:  # the Hub is unreachable: wait durably instead of failing
                raise ToolError(
                    f"waiting for child task {child.id}: {e.message}", suspend=f"child:{child.id}"
                ) from None
        return ToolResult(
            outcome_text(child), is_error=child.state != "succeeded", data={"task_id": child.id}
        )


A2A_MAX_WAIT_S = 75 * 60.0  # seed 000 §6: a Gateway lets a call wait 10 min and run 1 h


def _over_a2a(d: Delegate) -> bool:
    return d.url is not None or d.via == "a2a"


def _gateway_path(url: str) -> tuple[str, str] | None:
    """The (namespace, deployment) an agen Gateway URL names (``…/a2a/<ns>/<deployment>``)."""
    parts = urlsplit(url).path.rstrip("/").split("/")
    if len(parts) >= 3 and parts[-3] == "a2a" and parts[-2] and parts[-1]:
        return parts[-2], parts[-1]
    return None


async def _target(
    d: Delegate, ctx: ToolContext, port: DelegationPort | None
) -> tuple[str, str | None]:
    """Where the call goes and the bearer it presents (seed 000 §10).

    A delegate ``via: "a2a"`` names an agen deployment: the Hub resolves it to its Gateway and a call
    token naming this run's deployment as caller and that one callee. A delegate with a ``url`` gets
    such a token only when the url is this Hub's own Gateway for an agen deployment; any other agent
    gets no agen credential at all."""
    caller = f"{ctx.namespace}/{ctx.deployment}"
    if d.url is None:
        if port is None or ctx.task_id is None:
            raise ToolError(
                f"call_agent cannot reach {d.name!r} by name: resolving an agen deployment over A2A "
                "needs the Hub (a deployment's task, agen up or agen run); give the delegate a url"
            )
        try:
            found = await port.resolve_agent(
                ctx.task_id, d.namespace or ctx.namespace, d.name, caller=caller
            )
        except AgenError as e:
            raise ToolError(f"call_agent refused: {e.message}") from None
        if not found.urls:
            raise ToolError(
                f"call_agent cannot reach {d.name!r} over A2A: no Gateway serves this Hub (start "
                "agen up with --gateway-listen), or remove via to delegate through a child task"
            )
        return found.urls[0], found.call_token
    named = _gateway_path(d.url)
    if named is None or port is None or ctx.task_id is None:
        return d.url, None
    try:
        found = await port.resolve_agent(ctx.task_id, named[0], named[1], caller=caller)
    except AgenError:  # not a deployment of this Hub (or none it lets us call): no agen token
        return d.url, None
    own = {u.rstrip("/") for u in found.urls}
    return d.url, found.call_token if d.url.rstrip("/") in own else None


async def call_over_a2a(
    d: Delegate,
    args: dict[str, Any],
    ctx: ToolContext,
    max_depth: int,
    port: DelegationPort | None = None,
) -> ToolResult:
    """call_agent to a delegate reached over A2A (a ``url``, or ``via: "a2a"``): one synchronous
    A2A call (seed 000 §6), carrying the run's lineage and a call token for that callee, within the
    run's depth and time limits; through the Hub it counts towards maxFanOut and
    maxTotalDelegations like a child task."""
    text = args.get("input")
    if not isinstance(text, str) or not text.strip():
        raise ToolError("input is required: the task for the other agent, in plain words")
    depth = ctx.depth + 1
    if depth > max_depth:
        raise ToolError(
            f"call_agent refused: delegation depth {depth} is past limits.maxDelegationDepth "
            f"{max_depth}; do this part yourself"
        )
    wait_s = min(A2A_MAX_WAIT_S, ctx.time_left_s if ctx.time_left_s is not None else A2A_MAX_WAIT_S)
    if wait_s <= 0:
        raise ToolError("call_agent refused: this run has no time left (limits.maxRunDuration)")
    url, bearer = await _target(d, ctx, port)
    if port is not None and ctx.task_id is not None:
        try:
            await port.count_a2a_call(ctx.task_id, call_key("a2a", ctx))
        except UnavailableError as e:  # the Hub is down: the A2A path exists to keep going then
            log.warning("call_agent to %s not counted towards the delegation limits: %s", d.name, e)
        except AgenError as e:
            raise ToolError(f"call_agent refused: {e.message}") from None
    metadata: dict[str, Any] = {
        "agen.depth": depth,
        "agen.root_run_id": ctx.root_run_id,
        "agen.parent_run_id": ctx.run_id,
    }
    if ctx.traceparent:
        metadata["traceparent"] = ctx.traceparent
    if ctx.labels:
        metadata["agen.labels"] = dict(ctx.labels)
    message_id = f"{ctx.run_id}.{ctx.turn}.{ctx.call_index}"
    ledger = ctx.ledger
    prior = ledger.prior if ledger is not None else None
    recorded = (
        str(prior["a2a_task_id"])
        if prior and prior.get("url") == url and prior.get("message_id") == message_id
        else None
    )

    async def sent(task_id: str) -> None:  # the ledger knows the remote task before the wait
        if ledger is not None:
            await ledger.record({"url": url, "message_id": message_id, "a2a_task_id": task_id})

    try:
        answer = await call_a2a(
            url,
            text,
            message_id=message_id,
            metadata=metadata,
            bearer=bearer,
            wait_s=wait_s,
            resume_task_id=recorded,
            on_task=sent,
        )
    except A2AFailure as e:
        raise ToolError(f"call_agent to {d.name} ({url}): {e.message}") from None
    return ToolResult(
        answer.text,
        is_error=answer.is_error,
        data={"a2a_task_id": answer.task_id, "state": answer.state, "url": url},
    )


class StartAgentTool(_DelegateTool):
    name = "start_agent"
    description = (
        "Start a task on another agent and carry on. By default the child is joined: its result "
        "reaches you as a message, and finish waits until every joined child ended. With "
        "detach: true its result arrives later as a new message in this conversation."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "the delegate's name"},
            "input": {"type": "string", "description": "what the other agent should do"},
            "detach": {"type": "boolean", "default": False},
            "overrides": {
                "type": "object",
                "description": "narrow the child (tools, skills, systemAddendum, permissions, budget); "
                "only for delegates that allow it",
            },
        },
        "required": ["agent", "input"],
    }
    resumable = True

    def __init__(
        self,
        port: DelegationPort | None,
        delegates: Sequence[Delegate],
        reply_key: Any,
    ) -> None:
        super().__init__(port, delegates)
        self.reply_key = reply_key  # async (ctx) -> the caller's conversation key for replies

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        d = self._delegate(args)
        if d.url is not None:
            raise ToolError(
                f"start_agent cannot reach {d.name!r}: it is an A2A agent at {d.url}; "
                "call it with call_agent"
            )
        port, _task_id = self._need(ctx)
        overrides = args.get("overrides")
        if overrides is not None:
            if not d.overrides:
                raise ToolError(
                    f"delegate {d.name!r} does not accept overrides (its entry in "
                    "x-agen/config.json delegates does not set overrides: true); call it without them"
                )
            if not isinstance(overrides, dict):
                raise ToolError("overrides must be an object (tools, skills, permissions, budget)")
        detach = bool(args.get("detach"))
        reply = await self.reply_key(ctx) if detach else None
        child = await self._submit(
            port,
            self._spec(args, ctx, call_key("start", ctx), overrides=overrides, reply_key=reply),
        )
        how = (
            "detached: its result arrives later as a new message in this conversation"
            if detach
            else "joined: its result reaches you as a message; finish waits for it"
        )
        return ToolResult(
            f"started task {child.id} on {child.deployment} ({how})",
            data={"task_id": child.id, "joined": not detach},
        )


class QueryAgentTool(_PortTool):
    name = "query_agent"
    description = (
        "How a task you delegated (directly or further down) is doing: state, progress, outcome."
    )
    read_only = True
    input_schema = {
        "type": "object",
        "properties": {"task": {"type": "string", "description": "the child task's id"}},
        "required": ["task"],
    }

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port, task_id = self._need(ctx)
        try:
            child = await port.query_child(task_id, str(args.get("task") or ""))
        except AgenError as e:
            raise ToolError(e.message) from None
        view = child.for_model()
        return ToolResult(json.dumps(view, indent=2, sort_keys=True), data=view)


class SignalAgentTool(_PortTool):
    name = "signal_agent"
    description = "Send a message to a task you delegated (directly or further down); it reads it before its next step."
    input_schema = {
        "type": "object",
        "properties": {"task": {"type": "string"}, "message": {"type": "string"}},
        "required": ["task", "message"],
    }

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port, task_id = self._need(ctx)
        target = str(args.get("task") or "")
        try:
            await port.signal_child(task_id, target, str(args.get("message") or ""))
        except AgenError as e:
            raise ToolError(e.message) from None
        return ToolResult(f"signal sent to task {target}")


class AcquireLockTool(_PortTool):
    name = "acquire_lock"
    description = (
        "Take a named lock so no other task works on the same resource; it is released when you "
        "call release_lock, when its ttl passes, or when this task ends."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "ttl_seconds": {"type": "number", "minimum": 1, "maximum": 86400, "default": 300},
        },
        "required": ["name"],
    }

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port, task_id = self._need(ctx)
        name = str(args.get("name") or "")
        try:
            ttl = max(1.0, min(float(args.get("ttl_seconds") or 300), 86_400.0))
            fence = await port.acquire_lock(task_id, name, ttl)
        except AgenError as e:
            raise ToolError(e.message) from None
        if fence is None:
            raise ToolError(
                f"lock {name!r} is held by another task; try again later or work on something else"
            )
        ctx.locks[name] = fence
        return ToolResult(f"lock {name!r} acquired (fence {fence})", data={"fence": fence})


class ReleaseLockTool(_PortTool):
    name = "release_lock"
    description = "Release a lock you took with acquire_lock."
    input_schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port, task_id = self._need(ctx)
        name = str(args.get("name") or "")
        try:
            held = await port.release_lock(task_id, name)
        except AgenError as e:
            raise ToolError(e.message) from None
        ctx.locks.pop(name, None)
        return ToolResult(f"lock {name!r} released" if held else f"you did not hold lock {name!r}")


def delegation_tools(config: Any, port: DelegationPort | None, reply_key: Any) -> list[Tool]:
    """The delegation tools a bundle gets: call_agent, start_agent, query_agent and signal_agent
    when it declares delegates; acquire_lock and release_lock whenever a Hub is there to grant them."""
    tools: list[Tool] = []
    if config.delegates:
        tools += [
            CallAgentTool(
                port,
                config.delegates,
                config.limits.inline_wait_ms,
                config.limits.max_delegation_depth
                if config.limits.max_delegation_depth is not None
                else DEFAULT_MAX_DELEGATION_DEPTH,
            ),
            StartAgentTool(port, config.delegates, reply_key),
            QueryAgentTool(port),
            SignalAgentTool(port),
        ]
    if port is not None:
        tools += [AcquireLockTool(port), ReleaseLockTool(port)]
    return tools
