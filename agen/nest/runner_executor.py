"""The default executor: the engine (agen.runner.Runner) over the instance's bundle.

Its hooks give the Manager two ways to stop a run at its next checkpoint (before the next
model call, so the current step finishes): a drain (the task goes back to the queue without
counting an attempt and its run resumes from the checkpoint later) and a task hold
(PauseTask: the task waits until resumed).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agen.bundle import Bundle
from agen.errors import AgenError
from agen.nest.executor import ExecResult, ExecutorFactory, ProgressSink, run_request, status_of
from agen.nest.port import LeasedTask
from agen.store import Store

if TYPE_CHECKING:  # the engine loads when an instance starts, not when the Nest imports this
    from agen.runner.delegation import DelegationPort
    from agen.runner.loop import Runner

log = logging.getLogger("agen.nest")

DRAINED = "drained: the Nest stopped; the run resumes from its checkpoint"


class NestHooks:
    """Runner hooks: ``is_held`` is True while the Nest drains. (A paused task is seen by the Runner
    itself: its open and checkpoint transactions read the task's hold.)"""

    def __init__(
        self, progress: ProgressSink | None = None, delegation: DelegationPort | None = None
    ) -> None:
        self.progress = progress
        self.delegation = delegation  # None: no Hub to reach
        self.draining = False

    async def is_held(self, task_id: str) -> bool:
        return self.draining

    async def drain_inbox(self, task_id: str) -> list[str]:
        """No notes reach a managed run this way: the Hub's inbox wakes a waiting task instead."""
        return []

    async def report_progress(self, task_id: str | None, progress: dict[str, Any]) -> None:
        """The built-in report_progress tool: the task's latest progress, for `agen query` and the TUI."""
        if task_id is None or self.progress is None:
            return
        try:
            await self.progress(task_id, progress)
        except (AgenError, OSError) as e:  # low stakes: the run goes on without it
            log.info("task %s: progress not recorded: %s", task_id, e)


class RunnerExecutor:
    """One Runner per instance; it serves the instance's concurrent runs."""

    def __init__(self, runner: Runner, hooks: NestHooks | None = None) -> None:
        self.runner = runner
        self.hooks = hooks

    async def run(self, task: LeasedTask) -> ExecResult:
        result = await self.runner.run(run_request(task))
        outcome = result.outcome
        wait_for = result.wait_for
        if wait_for == "resume" and self.hooks is not None and self.hooks.draining:
            return ExecResult(status="released", outcome=None, release=DRAINED)
        error = None if result.status == "succeeded" else (outcome.summary or outcome.reason)
        return ExecResult(
            status=status_of(result.status), outcome=outcome, error=error, wait_for=wait_for
        )

    async def drain(self) -> None:
        if self.hooks is not None:
            self.hooks.draining = True

    def exit_reason(self) -> str | None:
        """A dead instance-wide tool server (seed 000 §7): the Manager replaces this instance.

        Runs in flight finish first; a call on the dead server meanwhile reconnects in place.
        """
        for ts in self.runner.toolsets:
            if not ts.healthy():
                return f"MCP server {ts.label} is not running"
        return None

    async def close(self) -> None:
        await self.runner.close()


def build_runner(
    store: Store,
    bundle: Bundle,
    owner: str,
    *,
    fake_delay_s: float = 0.0,
    hooks: NestHooks | None = None,
    platform_secrets: Mapping[str, str] | None = None,
) -> Runner:
    """A managed Runner: the bundle's MCP servers (per run when bound to ${WORKSPACE}), its permission
    rules, durable approvals, the task workspace and memory."""
    from agen.runner.approvals import StoreApprovalGate
    from agen.runner.loop import Runner
    from agen.runner.tooling import build_tooling

    t = build_tooling(bundle, store, platform_secrets=platform_secrets)
    return Runner(
        store,
        bundle,
        owner=owner,
        toolsets=list(t.toolsets),
        policy=t.policy,
        gate=StoreApprovalGate(store),
        redactor=t.redactor,
        hooks=hooks,
        fake_delay_s=fake_delay_s,
        extras=t.extras,
    )


async def start_executor(
    store: Store,
    bundle: Bundle,
    instance_id: str,
    *,
    fake_delay_s: float = 0.0,
    progress: ProgressSink | None = None,
    delegation: DelegationPort | None = None,
    platform_secrets: Mapping[str, str] | None = None,
) -> RunnerExecutor:
    """Build and start one instance's Runner (toolsets started once; a failure closes what started)."""
    hooks = NestHooks(progress, delegation)
    runner = build_runner(
        store,
        bundle,
        f"instance:{instance_id}",
        fake_delay_s=fake_delay_s,
        hooks=hooks,
        platform_secrets=platform_secrets,
    )
    try:
        await runner.start()
    except BaseException:
        await runner.close()
        raise
    return RunnerExecutor(runner, hooks)


def runner_factory(
    store: Store,
    *,
    fake_delay_s: float = 0.0,
    progress: ProgressSink | None = None,
    delegation: DelegationPort | None = None,
) -> ExecutorFactory:
    """An ExecutorFactory building each instance's Runner (started once, serving concurrent runs).
    ``delegation``: the DelegationPort its runs delegate through (the Nest's Hub client)."""

    async def build(
        bundle: Bundle, instance_id: str, platform_secrets: Mapping[str, str]
    ) -> RunnerExecutor:
        return await start_executor(
            store,
            bundle,
            instance_id,
            fake_delay_s=fake_delay_s,
            progress=progress,
            delegation=delegation,
            platform_secrets=platform_secrets,
        )

    return build
