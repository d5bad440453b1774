"""The Runner: a durable agent loop over one bundle (seed 000 §7).

Each turn builds the request, calls the model under the turn rules, runs the turn's tool
calls and checkpoints. A run ends on ``finish``, a plain answer, a guard, a budget or
cancellation, and stores an outcome. A task maps to at most one run: running it again
returns the finished result, or claims the run (epoch + 1) and resumes from the Store.
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Callable
from typing import Any, NamedTuple

from agen.bundle import Bundle
from agen.domain import Outcome, OutcomeStatus, RunRow, RunStatus
from agen.domain.prompt import system_prompt
from agen.errors import FencedError
from agen.runner import inbox
from agen.runner.artifacts import load_files
from agen.runner.budgets import REASON_TEXT, Budget, Guards, RunLimits
from agen.runner.calls import CallEnv, CallResult, execute_calls
from agen.runner.context import Context, MessageRow, Msg
from agen.runner.delegation import delegation_port
from agen.runner.effects import EffectRow, UnknownEffect, mark_effect_unknown, read_effects
from agen.runner.extras import RunExtras
from agen.runner.hooks import RunHooks
from agen.runner.join import CHILDREN, check_turn, unfinished_children
from agen.runner.policy import AllowAll, ApprovalGate, DenyAsks, ToolPolicy
from agen.runner.providers import Account, build_accounts
from agen.runner.providers.base import ModelRequest, ModelResponse
from agen.runner.records import (
    close_suspended_span,
    name_conversation,
    open_run,
    record_stopped_spans,
    save_cassette,
)
from agen.runner.redact import Redactor
from agen.runner.resume import patch_history, plan_repair
from agen.runner.review import is_reviewer, review, since_last_review
from agen.runner.rollover import fold
from agen.runner.shielding import finish_even_if_cancelled
from agen.runner.state import EventSink, RunState, call_dicts
from agen.runner.tools.base import Tool, ToolContext, Toolset
from agen.runner.tools.builtin import FINISH, FinishTool, builtin_tools
from agen.runner.tools.catalogue import activated_names, plan_catalogue
from agen.runner.tools.delegate import delegation_tools
from agen.runner.tools.wire_names import by_wire_name
from agen.runner.turn import TurnAnswer, TurnFailed, TurnPolicy, model_turn
from agen.runner.types import RunRequest, RunResult
from agen.store.base import Store, loads
from agen.store.records import columns

_JOIN_NOTE = (
    "[agen] {n} child task(s) you started are still running; their results reach you as messages. "
    "Wait for them (this run pauses until they end), then finish."
)
NUDGE = (
    "[agen] Your last turns repeated the same calls with the same results. Change approach, or call finish "
    "with what you have."
)


class _Shape(NamedTuple):
    limits: RunLimits
    system: str
    tools: dict[str, Tool]
    specs: tuple[dict[str, Any], ...]


class _Summary(NamedTuple):
    """A conversation's running summary (agen/runner/rollover.py)."""

    summary: str | None
    summarized_through: int


class _Wait(NamedTuple):
    """A task.waiting or task.requeued event of a run's task."""

    type: str
    data: str | None  # JSON text
    created_ms: int


class _Asked(NamedTuple):
    call_id: str | None


class Runner:
    """Runs a bundle's agent; one Runner serves many concurrent runs."""

    def __init__(
        self,
        store: Store,
        bundle: Bundle,
        *,
        owner: str,
        toolsets: list[Toolset] | None = None,
        policy: ToolPolicy | None = None,
        gate: ApprovalGate | None = None,
        redactor: Redactor | None = None,
        hooks: RunHooks | None = None,
        accounts: list[Account] | None = None,
        turn_policy: TurnPolicy | None = None,
        extra_system: list[str] | None = None,
        fake_delay_s: float = 0.0,
        extras: RunExtras | None = None,
    ) -> None:
        self.store = store
        self.bundle = bundle
        self.owner = owner
        self.toolsets = list(toolsets or [])
        self.policy = policy or AllowAll()
        self.gate = gate or DenyAsks()
        self.redactor = redactor or Redactor()
        self.hooks = hooks
        self.accounts = accounts
        h = bundle.harness
        self.turn_policy = turn_policy or TurnPolicy(max_retries=h.max_retries)
        self.extra_system = list(extra_system or [])
        self.fake_delay_s = fake_delay_s
        self.extras = extras  # workspace + memory (tools side); None = neither
        self.tools: dict[str, Tool] = {}
        self._plain: _Shape | None = None
        self._started = False
        self._start_lock = asyncio.Lock()

    async def start(self) -> None:
        """Build the providers and start the toolsets (once)."""
        async with self._start_lock:
            if self._started:
                return
            if self.accounts is None:
                self.accounts = await build_accounts(
                    self.bundle, self.redactor, fake_delay_s=self.fake_delay_s
                )
            h = self.bundle.harness
            tools = builtin_tools(
                self.store,
                result_schema=h.result.schema_ if h.result else None,
                skills=self.bundle.skills,
                progress=self.hooks.report_progress if self.hooks is not None else None,
                max_tool_result_chars=h.max_tool_result_chars,
            )
            port = delegation_port(self.hooks)
            tools.extend(delegation_tools(self.bundle.config, port, self._reply_key))
            if port is not None and self.bundle.config.delegates:
                finish = tools[0]
                assert isinstance(finish, FinishTool)
                finish.joined = lambda task_id: unfinished_children(port, task_id)
            if self.extras is not None:
                tools.extend(self.extras.tools())
            for ts in self.toolsets:
                tools.extend(await ts.start())
            self.tools = by_wire_name(tools)  # two tools with one model-facing name are refused
            self._plain = None
            self._started = True

    async def close(self) -> None:
        for ts in self.toolsets:
            await ts.close()
        for account in self.accounts or []:
            await account.provider.aclose()

    # -- a run ------------------------------------------------------------------------------

    async def run(
        self,
        req: RunRequest,
        *,
        cancel: asyncio.Event | None = None,
        events: EventSink | None = None,
    ) -> RunResult:
        await self.start()
        assert self.accounts is not None
        model = self.accounts[0].models[0]
        masked = self.redactor.redact(
            req.input
        )  # a secret typed into the input is masked before it is stored
        if masked != req.input:  # or sent to the model, like tool results (docs/security.md)
            req = req.model_copy(update={"input": masked})
        opened = await self.store.write(
            lambda tx: open_run(tx, req, self.owner, model, self.bundle.digest)
        )
        row = opened.run
        if opened.finished:
            outcome = Outcome.model_validate(
                loads(row.outcome) or {"status": "failed", "reason": "unknown"}
            )
            return RunResult(run_id=row.id, status=row.status, outcome=outcome, epoch=row.epoch)
        st = await self._state(req, row, opened.resumed, events, cancel, opened.messages)
        st.held, st.inbox = opened.held, opened.inbox
        if st.resumed and st.task_id is not None:  # stopped in its last turn: still its last
            st.wrap_up = await inbox.wrapping_up(self.store, st.task_id)
        scope = await self.extras.begin(req, st.run_id) if self.extras is not None else None
        if scope is not None:
            st.workspace = scope.workspace_path
            st.sections = scope.section
            if scope.system_lines:
                st.ctx.system = "\n\n".join([st.ctx.system, *scope.system_lines])
            if (
                scope.toolsets
            ):  # MCP servers bound to this run's workspace (${WORKSPACE}), started per run
                try:
                    self._add_run_tools(st, await scope.start_tools())
                except Exception as e:
                    await scope.close_tools()
                    scope.end()
                    return await self._end(
                        st,
                        Outcome(
                            status=OutcomeStatus.FAILED,
                            reason="error",
                            summary=f"a tool server of this run could not start: {e}",
                        ),
                    )
        me = asyncio.current_task()
        watcher = None
        result: RunResult | None = None
        handed_back = False
        if cancel is not None and me is not None:
            watcher = asyncio.create_task(cancel.wait())
            watcher.add_done_callback(lambda _t: me.cancel() if cancel.is_set() else None)
        try:
            result = await self._drive(st)
            why = result.suspended
            if why is not None:
                run_id, epoch, span = st.run_id, st.epoch, st.span_id
                await self.store.write(
                    lambda tx: close_suspended_span(tx, run_id, epoch, span, why)
                )
        except asyncio.CancelledError:
            by_event = cancel is not None and cancel.is_set()
            if by_event and me is not None:
                me.uncancel()
            if not by_event and await self._held(st):
                # Its owner stops it to run it again later (a Nest's drain that ran out of time):
                # stopped is not cancelled. The record stays as a crash leaves it, workspace
                # included, and the task's next lease resumes the run.
                handed_back = True
                raise
            result = await finish_even_if_cancelled(self._stopped(st))
            if not by_event:
                raise
        finally:
            if watcher is not None:
                watcher.cancel()
            if scope is not None:
                if scope.toolsets:  # a Task for the shield only when there is a server to stop
                    await finish_even_if_cancelled(scope.close_tools())
                if not handed_back and not (result is not None and result.suspended):
                    scope.end()  # a suspended run keeps its workspace until it resumes and ends
        if me is not None and me.cancelling():  # stopped again while it wrapped up: end as stopped
            raise asyncio.CancelledError
        return result

    async def _held(self, st: RunState) -> bool:
        """Whether the run's owner holds it (a Nest that drains): it stops to resume later."""
        return (
            self.hooks is not None
            and st.task_id is not None
            and await self.hooks.is_held(st.task_id)
        )

    async def _stopped(self, st: RunState) -> RunResult:
        """The run was stopped: it ends cancelled. When the Hub ended it first (a cancelled task:
        the run's record is closed and this owner fenced off), the spans of the calls it was in
        are still added to that record."""
        outcome = Outcome(
            status=OutcomeStatus.CANCELLED, reason="cancelled", summary="the run was cancelled"
        )
        try:
            return await self._end(st, outcome)
        except FencedError:
            spans = st.spans
            await self.store.write(lambda tx: record_stopped_spans(tx, st.run_id, spans))
            raise

    def _add_run_tools(self, st: RunState, tools: list[Tool]) -> None:
        by_wire_name([*self.tools.values(), *tools])  # a per-run server must not hide another tool
        every = st.catalogue.everything() if st.catalogue is not None else dict(st.tools)
        every.update(self._visible(st.req, {t.wire_name: t for t in tools}))
        self._surface(st, every, lambda: activated_names([*st.ctx.earlier, *st.ctx.current]))

    def _surface(
        self,
        st: RunState,
        tools: dict[str, Tool],
        activated: Callable[[], list[str]],
        specs: tuple[dict[str, Any], ...] | None = None,
    ) -> None:
        """The tools the run is sent: all of ``tools`` (``specs``: theirs, when already built), or,
        past builtinTools.toolCatalogue MCP tools, the catalogue with what ``activated()`` names
        (read from the history only then)."""
        catalogue = plan_catalogue(
            tools, self.bundle.config.builtin_tools.tool_catalogue, activated
        )
        st.catalogue = catalogue
        if catalogue is None:
            st.tools = tools
            st.specs = list(specs) if specs is not None else [t.spec() for t in tools.values()]
            return

        def refresh() -> None:
            st.tools = catalogue.surface()
            st.specs = [t.spec() for t in st.tools.values()]

        catalogue.on_change = refresh
        refresh()

    async def _state(
        self,
        req: RunRequest,
        row: RunRow,
        resumed: bool,
        events: EventSink | None,
        cancel: asyncio.Event | None,
        known: list[MessageRow] | None = None,
    ) -> RunState:
        b = self.bundle
        limits, system, tools, specs = self._shape(req)
        rows = (
            known
            if known is not None
            else await self.store.rows(  # a brand-new conversation: no read back
                MessageRow,
                "SELECT seq, turn, role, content, run_id, tool_calls, tool_call_id, name, is_error, model,"
                " CASE WHEN role = 'assistant' THEN raw END AS raw, attachments FROM messages"
                " WHERE conversation_id = ? ORDER BY seq",  # raw: thinking blocks
                (row.conversation_id,),
            )
        )
        msgs = [Msg.of(r) for r in rows]
        await load_files(self.store, req.namespace, msgs)
        earlier = patch_history([m for m in msgs if m.run_id != row.id and not is_reviewer(m)])
        current = [m for m in msgs if m.run_id == row.id]
        budget = Budget(
            limits,
            started_ms=row.started_ms + (await self._waited_ms(row.id) if resumed else 0),
        )
        assert row.span_id is not None, "open_run writes every run's top-level span"
        st = RunState(
            req=req,
            run_id=row.id,
            conversation_id=row.conversation_id,
            root_run_id=row.root_run_id,
            trace_id=row.trace_id,
            span_id=row.span_id,
            epoch=row.epoch,
            started_ms=row.started_ms,
            seq=(msgs[-1].seq + 1) if msgs else 1,
            ctx=Context(system, b.harness.context_tokens, earlier=earlier),
            budget=budget,
            guards=Guards(limits.stuck_repeats),
            tools={},
            specs=[],
            redactor=self.redactor,
            trust=req.trust,
            digest=b.digest,
            resumed=resumed,
            events=events,
            cancel=cancel,
        )
        self._surface(st, dict(tools), lambda: activated_names(msgs), specs)
        st.ctx.extend(current)
        if b.config.rollover is not None and known is None:  # a new conversation has no summary
            conv = await self.store.row(
                _Summary,
                f"SELECT {columns(_Summary)} FROM conversations WHERE id = ?",
                (row.conversation_id,),
            )
            if conv is not None and conv.summary:
                st.ctx.fold(conv.summary, conv.summarized_through)
        st.turn = sum(1 for m in current if m.role == "assistant")
        budget.turns = st.turn
        if resumed:
            w = limits.cached_weight
            budget.tokens = (
                row.input_tokens - row.cached_tokens + row.cached_tokens * w + row.output_tokens
            )
            budget.usd = row.cost_usd
            budget.usd_known = budget.usd > 0
        return st

    async def _waited_ms(self, run_id: str) -> int:
        """Time the run spent suspended on approvals: a person's answer time is not the run's duration
        (maxRunDuration), so an approval decided after an hour does not end the run on resume."""
        waited = await self.store.scalar(
            "SELECT COALESCE(SUM(decided_ms - created_ms), 0) FROM approvals WHERE run_id = ? AND decided_ms IS NOT NULL",
            (run_id,),
        )
        return max(0, int(waited or 0)) + await self._delegated_ms(run_id)

    async def _delegated_ms(self, run_id: str) -> int:
        """Time the run's task spent suspended on its children (call_agent, joined start_agent):
        a coordinator's duration is its own work, not its children's."""
        if not self.bundle.config.delegates:
            return 0
        rows = await self.store.rows(
            _Wait,
            f"SELECT {columns(_Wait, 'e')} FROM events e JOIN runs r ON r.task_id = e.task_id"
            " WHERE r.id = ? AND e.type IN ('task.waiting', 'task.requeued') ORDER BY e.seq",
            (run_id,),
        )
        total, since = 0, None
        for w in rows:
            data = loads(w.data) or {}
            if w.type == "task.waiting":
                wait_for = str(data.get("wait_for") or "")
                since = w.created_ms if wait_for.startswith(("child", CHILDREN)) else None
            elif since is not None:
                total += w.created_ms - since
                since = None
        return total

    def _shape(self, req: RunRequest) -> _Shape:
        """Limits, system prompt, visible tools and their specs for a run of ``req``: the same for every
        run without task overrides, so built once per Runner (tools are fixed once started)."""
        if req.overrides is None and self._plain is not None:
            return self._plain
        b = self.bundle
        lim = b.config.limits
        ov = req.overrides
        limits = RunLimits(
            max_turns=_narrow(lim.max_turns, ov.max_turns if ov else None) or lim.max_turns,
            max_run_duration_ms=_narrow(
                lim.max_run_duration_ms, ov.max_run_duration_ms if ov else None
            )
            or lim.max_run_duration_ms,
            max_tokens=_narrow(lim.max_tokens_per_run, ov.max_tokens_per_run if ov else None),
            max_usd=_narrow(lim.max_usd_per_run, ov.max_usd_per_run if ov else None),
            report_tokens=lim.report_tokens,
            stuck_repeats=lim.stuck_repeats,
            cached_weight=b.config.budget.cached_input_weight,
            max_output_tokens=b.harness.max_output_tokens,
        )
        system = system_prompt(
            b,
            skills=ov.skills if ov else None,
            addendum=ov.system_addendum if ov else None,
            extra=self.extra_system,
        )
        tools = self._visible(req)
        shape = _Shape(limits, system, tools, tuple(t.spec() for t in tools.values()))
        if ov is None:
            self._plain = shape
        return shape

    def _visible(self, req: RunRequest, tools: dict[str, Tool] | None = None) -> dict[str, Tool]:
        allow = req.overrides.tools if req.overrides else None
        policy = self._policy(req)
        out: dict[str, Tool] = {}
        for wire, tool in (self.tools if tools is None else tools).items():
            if not tool.bypass_permissions:
                if not policy.visible(tool):
                    continue
                if allow is not None and not any(
                    fnmatch.fnmatchcase(tool.name, p) or fnmatch.fnmatchcase(wire, p) for p in allow
                ):
                    continue
            out[wire] = tool
        return out

    def _policy(self, req: RunRequest) -> ToolPolicy:
        """The bundle's rules narrowed by the task's overrides (when the policy supports it)."""
        narrow = getattr(self.policy, "for_task", None)
        return (
            narrow(req.overrides)
            if narrow is not None and req.overrides is not None
            else self.policy
        )

    def _env(self, req: RunRequest) -> CallEnv:
        h = self.bundle.harness
        return CallEnv(
            self.store, self._policy(req), self.gate, h.parallel_tool_calls, h.max_tool_result_chars
        )

    async def _drive(self, st: RunState) -> RunResult:
        """Turns until the run ends or suspends (a resumed run first repairs its last turn)."""
        if st.resumed:
            done = await self._repair(st)
            if done is not None:
                return done
        env = self._env(st.req)
        while True:
            done = await self._turn(st, env)
            if done is not None:
                return done

    async def _turn(self, st: RunState, env: CallEnv) -> RunResult | None:
        """One turn: checkpoint, model call, then the tools it asked for; None: the run goes on."""
        stop = await self._before_model_call(st)
        if stop is not None:
            return stop
        answer = await self._call_model(st)
        if isinstance(answer, RunResult):
            return answer
        resp = await self._record_answer(st, answer)
        if st.wrap_up is not None:
            return await self._last_turn(st, env, resp)
        if not resp.tool_calls:  # a plain answer is the result (reviewed first when declared)
            return await self._plain_answer(st, resp)
        return await self._tool_turn(st, env, resp)

    async def _before_model_call(self, st: RunState) -> RunResult | None:
        """The checkpoint before every model call: a hold suspends, notes that arrived join the
        conversation, a spent budget asks for the final report, memory sections are refreshed."""
        task_id = st.task_id
        if st.held or await self._held(st):
            await st.flush(self.store)
            return self._suspended(st, "resume")
        if self.hooks is not None and task_id is not None:
            for note in await self.hooks.drain_inbox(task_id):
                st.add_message("user", str(note))
        # signals, graceful cancels' wrap-up requests, steers: new user messages
        await inbox.drain(self.store, st)
        port = delegation_port(self.hooks)
        if port is not None and (self.bundle.config.delegates or st.req.parent_run_id):
            why = await check_turn(port, st, self.store)
            if why == CHILDREN:
                await st.flush(self.store)
                return self._suspended(st, CHILDREN)
            if why is not None and st.wrap_up is None:
                return await self._report(st, why)
        reason = st.budget.exceeded() if st.wrap_up is None else None  # the last turn reports
        if reason is not None:
            return await self._report(st, reason)
        if st.sections is not None:
            st.ctx.section = await st.sections()  # memory blocks and live context, fresh every call
        return None

    async def _plain_answer(self, st: RunState, resp: ModelResponse) -> RunResult | None:
        """A plain answer is a finish: it waits for the joined children first (a note asks the
        model to wait; their results reach it as messages)."""
        port = delegation_port(self.hooks) if self.bundle.config.delegates else None
        running = await unfinished_children(port, st.task_id)
        if running:
            st.add_message("user", _JOIN_NOTE.format(n=running))
            return None
        return await self._finished(st, Outcome(status=OutcomeStatus.DONE, summary=resp.text))

    async def _call_model(self, st: RunState) -> TurnAnswer | RunResult:
        """The model call (retries and fail-over inside model_turn); a call that failed for good ends the run."""
        h = self.bundle.harness
        if (spec := self.bundle.config.rollover) is not None:
            await fold(st, spec, self.accounts or [], self.turn_policy, self.store, h.temperature)
        request = ModelRequest(
            model=self._first_model(),  # model_turn sends it as is to the first model it tries
            messages=st.ctx.messages(st.budget.late_lines()),
            tools=st.specs,
            max_tokens=st.budget.max_tokens_for_call(),
            temperature=h.temperature,
            parallel_tool_calls=h.parallel_tool_calls if st.specs else None,
            reasoning_effort=h.reasoning_effort,
            tier=self._tier(st.req),
            run_id=st.run_id,
            run_turn=st.turn,
        )
        try:
            return await model_turn(
                self.accounts or [], request, self.turn_policy, st.live, st.watched
            )
        except TurnFailed as e:
            self._spans(st, e.spans)
            return await self._end(
                st,
                Outcome(
                    status=OutcomeStatus.FAILED,
                    reason=e.reason,
                    summary=e.message,
                    data=_failed_account(st, e),
                ),
            )

    async def _record_answer(self, st: RunState, answer: TurnAnswer) -> ModelResponse:
        """The assistant turn into the run's record (spans, usage, message) and its event."""
        self._spans(st, answer.spans)
        resp = answer.response
        st.turn += 1
        st.budget.turns = st.turn
        st.add_usage(answer.account.label, resp.model or answer.model_sent, resp.usage)
        calls = call_dicts(resp.tool_calls)
        st.add_message(
            "assistant",
            resp.text,
            tool_calls=calls or None,
            model=resp.model or answer.model_sent,
            usage=resp.usage,
            raw=resp.raw,
            thinking=resp.thinking or None,
        )
        await st.emit(
            {"type": "assistant", "turn": st.turn, "text": resp.text, "tool_calls": calls}
        )
        return resp

    async def _tool_turn(self, st: RunState, env: CallEnv, resp: ModelResponse) -> RunResult | None:
        """Run the turn's tool calls and record their results; the finish tool ends the run, a tool
        that waits suspends it, an approval still pending suspends on it."""
        calls = resp.tool_calls
        tools = [(st.tools[c.name], c.arguments) for c in calls if c.name in st.tools]
        if any(t.side_effect_for(a) or t.starts_child_for(a) for t, a in tools):
            # the assistant turn is durable before any effect starts, and its usage counts before
            # a child is handed its share of the tree's budget
            await st.flush(self.store)
        results = await execute_calls(env, st, calls)
        _refuse_finish_beside_joined(results)
        waiting = await self._await_approval(st, results)
        if waiting is not None:
            return waiting
        suspend = await self._record_results(st, results)
        finish = finish_outcome(results)
        if finish is not None and suspend is None:
            return await self._finished(st, finish)
        if suspend is not None:
            await st.flush(self.store)
            return self._suspended(st, suspend)
        return await self._end_of_turn(st, resp, results)

    async def _last_turn(self, st: RunState, env: CallEnv, resp: ModelResponse) -> RunResult:
        """The one turn after a wrap-up request (graceful cancel, interrupt): its calls with side
        effects were refused (agen/runner/calls.py), a call that would wait gets no wait, and the
        run ends cancelled with what the model wrapped up as its outcome's summary."""
        declared: Outcome | None = None
        if resp.tool_calls:
            results = await execute_calls(env, st, resp.tool_calls)
            for r in results:
                content, is_error = r.content, r.is_error
                if r.suspend is not None or r.approval is not None:
                    content, is_error = "not waited for: this task is being stopped", True
                st.add_message(
                    "tool", content, tool_call_id=r.call.id, name=r.call.name, is_error=is_error
                )
            declared = finish_outcome(results)
        summary = (declared.summary if declared else "") or resp.text or "stopped while wrapping up"
        return await self._end(
            st,
            Outcome(
                status=OutcomeStatus.CANCELLED,
                reason=st.wrap_up,
                summary=summary,
                data=declared.data if declared else None,
                artifacts=declared.artifacts if declared else [],
            ),
        )

    async def _record_results(self, st: RunState, results: list[CallResult]) -> str | None:
        """The turn's tool results into the record; returns why the run suspends, if a call waits
        (that call has no result yet: it stays pending and runs again on resume)."""
        suspend: str | None = None
        for r in results:
            if r.suspend is not None:
                suspend = suspend or r.suspend
                continue
            st.add_message(
                "tool", r.content, tool_call_id=r.call.id, name=r.call.name, is_error=r.is_error
            )
            await st.emit(
                {
                    "type": "tool_result",
                    "turn": st.turn,
                    "tool": r.tool,
                    "content": r.content,
                    "is_error": r.is_error,
                }
            )
        return suspend

    async def _end_of_turn(
        self, st: RunState, resp: ModelResponse, results: list[CallResult]
    ) -> RunResult | None:
        """The loop guards (a nudge, or the report when stuck), then the turn's checkpoint."""
        calls = resp.tool_calls
        verdict = st.guards.record_turn(
            resp.text, [(c.name, c.arguments) for c in calls], [r.content for r in results]
        )
        if verdict == "nudge":
            st.add_message("user", NUDGE)
        elif verdict == "stuck":
            return await self._report(st, "stuck")
        await st.flush(self.store)
        if st.cancel is not None and st.cancel.is_set():
            raise asyncio.CancelledError
        return None

    async def _await_approval(self, st: RunState, results: list[CallResult]) -> RunResult | None:
        """A call waits for a pending approval: store the results before it and suspend on it (the task
        gives up its lease and slot; the decision requeues it and the run resumes from here)."""
        pending = next((r.approval for r in results if r.approval is not None), None)
        if pending is None:
            return None
        for r in results:
            if r.approval is None:
                st.add_message(
                    "tool", r.content, tool_call_id=r.call.id, name=r.call.name, is_error=r.is_error
                )
        await st.flush(self.store)
        return self._suspended(st, f"approval:{pending}")

    async def _repair(self, st: RunState) -> RunResult | None:
        rows = await self.store.rows(
            EffectRow, f"SELECT {columns(EffectRow)} FROM effects WHERE run_id = ?", (st.run_id,)
        )
        asked = await self.store.rows(
            _Asked, "SELECT call_id FROM approvals WHERE run_id = ?", (st.run_id,)
        )
        rep = plan_repair(
            st.run_id,
            since_last_review(st.ctx.current),
            st.tools,
            read_effects(rows),
            asked={r.call_id for r in asked if r.call_id},
        )
        if rep.finish_args is not None:
            finish = self.tools[FINISH]
            assert isinstance(finish, FinishTool)
            return await self._finished(st, finish.outcome(rep.finish_args))
        if rep.unknown:
            req = st.req
            unknown = [UnknownEffect(c.name, c.id, key) for c, key in rep.unknown]
            await self.store.write(
                mark_effect_unknown(
                    st.run_id, st.epoch, req.namespace, req.deployment, req.task_id, unknown
                )
            )
        for call, content, is_error in rep.results:
            st.add_message("tool", content, tool_call_id=call.id, name=call.name, is_error=is_error)
        if rep.rerun:
            results = await execute_calls(
                self._env(st.req), st, [c for _, c in rep.rerun], [i for i, _ in rep.rerun]
            )
            waiting = await self._await_approval(st, results)
            if waiting is not None:
                return waiting
            suspend: str | None = None
            for r in results:
                if r.suspend is not None:
                    suspend = suspend or r.suspend
                    continue
                st.add_message(
                    "tool", r.content, tool_call_id=r.call.id, name=r.call.name, is_error=r.is_error
                )
            finished = finish_outcome(results)
            if suspend is not None:
                await st.flush(self.store)
                return self._suspended(st, suspend)
            if finished is not None:
                return await self._finished(st, finished)
        if st.messages:
            await st.flush(self.store)
        return None

    async def _report(self, st: RunState, reason: str) -> RunResult:
        """A limit was reached: one last call with tool_choice none for a report; the run ends partial."""
        limits = st.budget.limits
        what = REASON_TEXT.get(reason, reason)
        if limits.report_tokens <= 0:
            return await self._end(
                st,
                Outcome(
                    status=OutcomeStatus.FAILED, reason=reason, summary=f"the run stopped at {what}"
                ),
            )
        st.add_message(
            "user",
            f"[agen] You have reached {what}. Stop working now and write your final report: "
            "what you did, what you found and what is left. Do not call tools.",
        )
        request = ModelRequest(
            model="",
            messages=st.ctx.messages(),
            tools=st.specs,
            max_tokens=limits.report_tokens,
            tool_choice="none" if st.specs else None,
            temperature=self.bundle.harness.temperature,
            run_id=st.run_id,
            run_turn=st.turn,
            tier=self._tier(st.req),
        )
        try:
            answer = await model_turn(
                self.accounts or [], request, self.turn_policy, st.live, st.watched
            )
        except TurnFailed as e:
            self._spans(st, e.spans)
            return await self._end(
                st,
                Outcome(
                    status=OutcomeStatus.FAILED,
                    reason=reason,
                    summary=f"the run stopped at {what}; the report call failed: {e.message}",
                ),
            )
        self._spans(st, answer.spans)
        st.turn += 1
        resp = answer.response
        st.add_usage(answer.account.label, resp.model or answer.model_sent, resp.usage)
        st.add_message(
            "assistant", resp.text, model=resp.model or answer.model_sent, usage=resp.usage
        )
        return await self._end(
            st, Outcome(status=OutcomeStatus.PARTIAL, reason=reason, summary=resp.text)
        )

    async def _finished(self, st: RunState, outcome: Outcome) -> RunResult | None:
        """The executor finished: with a declared review and status done, the reviewer grades the result
        first (agen/runner/review.py). None: not satisfied, the executor revises (the round is checkpointed)."""
        spec = self.bundle.config.review
        if spec is None or outcome.status != "done":
            return await self._end(st, outcome)
        step = await review(
            st,
            outcome,
            spec,
            self.accounts or [],
            self.turn_policy,
            self.bundle.harness.temperature,
            self.store,
        )
        if step.outcome is not None:
            return await self._end(st, step.outcome)
        await st.flush(self.store)
        return None

    async def _end(self, st: RunState, outcome: Outcome) -> RunResult:
        dumped = outcome.model_dump(mode="json")
        data = self.redactor.redact_obj(dumped)
        if data is not dumped:  # a secret was masked: the result carries the masked outcome too
            outcome = Outcome.model_validate(data)
        status = outcome.run_status
        await st.flush(self.store, status=status, outcome=data)
        recorded: list[dict[str, Any]] = []
        for account in self.accounts or []:
            recorded.extend(account.provider.take_recorded(st.run_id) or [])
        if recorded:
            r, digest = st.req, self.bundle.digest
            await self.store.write(
                lambda tx: save_cassette(tx, st.run_id, r.namespace, r.deployment, digest, recorded)
            )
        await st.emit({"type": "finished", "status": status, "outcome": data})
        return RunResult(
            run_id=st.run_id, status=status, outcome=outcome, epoch=st.epoch, resumed=st.resumed
        )

    def _suspended(self, st: RunState, why: str) -> RunResult:
        outcome = Outcome(
            status=OutcomeStatus.NEEDS_INPUT,
            reason=why,
            summary=f"the run is suspended ({why}); it resumes later",
        )
        return RunResult(
            run_id=st.run_id,
            status=RunStatus.RUNNING,
            outcome=outcome,
            epoch=st.epoch,
            resumed=st.resumed,
            suspended=why,
        )

    async def _reply_key(self, ctx: ToolContext) -> str:
        """The conversation a detached child's result is submitted to: the caller's key, or (a
        conversation without one) ``async:<conversation>``, set on the conversation now."""
        if ctx.conversation_key:
            return ctx.conversation_key
        key = f"async:{ctx.conversation_id}"
        await self.store.write(lambda tx: name_conversation(tx, ctx.conversation_id, key))
        return key

    def _spans(self, st: RunState, spans: list[Any]) -> None:
        for s in spans:
            st.add_span(
                "gen_ai.chat",
                s.status,
                {**s.attrs, "agen.turn": st.turn + 1},
                s.started_ms,
                s.ended_ms,
                s.error,
            )

    def _first_model(self) -> str:
        return self.accounts[0].models[0] if self.accounts and self.accounts[0].models else ""

    def _tier(self, req: RunRequest) -> str | None:
        """The routing tier the primary account runs this request at (only a routing provider has one)."""
        if not self.accounts:
            return None
        primary = self.accounts[0]
        return primary.provider.route_tier(primary.models[0], req.model_tier, req.budget_pressure)


def finish_outcome(results: list[CallResult]) -> Outcome | None:
    """The outcome a turn's successful ``finish`` call declared (the last one, if several), or None:
    the one place a run's end is read from its tool results, for live turns and repaired ones."""
    declared: Outcome | None = None
    for r in results:
        if r.call.name == FINISH and not r.is_error and isinstance(r.data, dict):
            declared = r.data["outcome"]
    return declared


def _refuse_finish_beside_joined(results: list[CallResult]) -> None:
    """finish in the same turn as a joined start_agent is refused: the children's results have not
    reached the model yet (the calls ran concurrently, so finish's own check could not see them)."""
    joined = any(
        r.call.name == "start_agent" and isinstance(r.data, dict) and r.data.get("joined")
        for r in results
    )
    for r in results:
        if joined and r.call.name == FINISH and not r.is_error:
            r.is_error, r.data = True, None
            r.content = (
                "you started joined child tasks in this same turn; wait for their results "
                "(they reach you as messages), then call finish again"
            )


def _failed_account(st: RunState, e: TurnFailed) -> dict[str, Any] | None:
    """Which provider account (and key) a failed model call used, so the Hub can hold that account."""
    acct = e.account.account_id(st.req.namespace) if e.account is not None else None
    if not acct:
        return None
    data: dict[str, Any] = {"account": acct}
    if e.account is not None and e.account.key_fingerprint:
        data["key_fingerprint"] = e.account.key_fingerprint  # the hold belongs to this key value
    return data


def _narrow(base: Any, override: Any) -> Any:
    if override is None:
        return base
    if base is None:
        return override
    return min(base, override)
