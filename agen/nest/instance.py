"""One instance: an asyncio worker that leases up to its free slots and runs tasks.

It leases in batches (one transaction for many tasks), waits on the Hub's work signal
instead of polling per task, marks each task running, and completes it with the lease
id it got. A task it cannot start is released at once without counting an attempt.
An instance of a task-kind deployment leases exactly one task, runs it and stops (seed 000 §4).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from agen.errors import AgenError, FencedError, UnavailableError
from agen.nest.executor import ExecResult, Executor
from agen.nest.port import Assignment, HubPort, InstanceReport, LeasedTask, LeaseRef
from agen.store import now_ms
from agen.util.backoff import next_backoff

log = logging.getLogger("agen.nest")
IDLE_WAIT_S = 0.5
REPORT_RETRY_MIN_S, REPORT_RETRY_MAX_S = (
    0.5,
    5.0,
)  # a task's end reported again while no Hub answers


class Instance:
    def __init__(
        self,
        instance_id: str,
        assignment: Assignment,
        executor: Executor,
        port: HubPort,
        nest_id: str,
        *,
        lease_ms: int,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.id = instance_id
        self.assignment = assignment
        self.executor = executor
        self.port = port
        self.nest_id = nest_id
        self.lease_ms = lease_ms
        self.state = "starting"
        self.started_ms = clock()
        self.exit_reason: str | None = None
        self.running: dict[str, tuple[LeaseRef, asyncio.Task[None]]] = {}
        self.lost: set[str] = set()
        self._stop_leasing = asyncio.Event()
        self._slot = asyncio.Event()
        self._main: asyncio.Task[None] | None = None

    @property
    def digest(self) -> str:
        return self.assignment.digest

    @property
    def deployment_id(self) -> str:
        return self.assignment.deployment_id

    def report(self) -> InstanceReport:
        state = self.state
        if state == "ready" and self.running:
            state = "busy"
        return InstanceReport(
            id=self.id,
            deployment_id=self.deployment_id,
            digest=self.digest,
            state=state,
            in_flight=len(self.running),
            exit_reason=self.exit_reason,
        )

    def start(self) -> asyncio.Task[None]:
        self._main = asyncio.create_task(self._lease_loop(), name=f"instance-{self.id}")
        return self._main

    @property
    def done(self) -> bool:
        return self._main is not None and self._main.done() and not self.running

    async def _lease_loop(self) -> None:
        self.state = "ready"
        port, a = self.port, self.assignment
        one_task = a.kind == "task"
        while not self._stop_leasing.is_set():
            free = (1 if one_task else a.max_concurrency) - len(self.running)
            if free <= 0:
                self._slot.clear()
                await self._slot.wait()
                continue
            generation = await port.wait_for_work(-1, 0)
            try:
                leased = await port.lease(
                    self.nest_id, self.id, a.deployment_id, free, self.lease_ms
                )
            except AgenError as e:
                log.warning("instance %s: lease failed: %s", self.id, e)
                leased = []
                await asyncio.sleep(1.0)
            for task in leased:
                if self._stop_leasing.is_set():
                    await self._release(task, "instance stopping before the task started")
                    continue
                ref = task.ref  # one LeaseRef per task: every report presents it
                self.running[task.id] = (
                    ref,
                    asyncio.create_task(self._run(task, ref), name=f"task-{task.id}"),
                )
            if one_task and leased:
                self._stop_leasing.set()  # its one task: no more leases, and it stops once the task ends
                await self._finish_one_task()
                return
            if len(leased) < free and not self._stop_leasing.is_set():
                # The queue held fewer than asked for when this lease ran, so leasing again now
                # finds nothing (a lease is a write transaction: an idle one costs the store a
                # round of statements, and joins the group commit of the runs just started). Wait
                # for work newer than the generation read before this lease: nothing submitted
                # since is missed.
                await self._idle(generation)

    async def _idle(self, generation: int) -> None:
        """Wait for new work or the idle interval, but end at once on stop_leasing.

        A drain (every one-shot ``agen run`` ends with one) must not sit out the idle interval.
        """
        work = asyncio.ensure_future(self.port.wait_for_work(generation, IDLE_WAIT_S))
        stop = asyncio.ensure_future(self._stop_leasing.wait())
        try:
            await asyncio.wait((work, stop), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (work, stop):
                waiter.cancel()

    async def _finish_one_task(self) -> None:
        """A task-kind instance: wait for its task, close its executor, stop (the Manager forgets it)."""
        await asyncio.gather(*(t for _, t in self.running.values()), return_exceptions=True)
        if self.state in ("ready", "busy"):
            with contextlib.suppress(Exception):
                await self.executor.close()
            self.state, self.exit_reason = "stopped", "ran its one task"

    async def _release(self, task: LeasedTask, reason: str) -> None:
        with contextlib.suppress(AgenError):
            await self.port.release(task.ref, count_attempt=False, reason=reason)

    async def _run(self, task: LeasedTask, ref: LeaseRef) -> None:
        try:
            if not task.started:
                try:
                    await self.port.mark_running(ref)
                except AgenError as e:
                    log.info("task %s not started: %s", task.id, e)
                    return
            result = await self._execute(task, ref)
            if result is None:
                return
            try:
                await self._report(task, ref, result)
            except AgenError as e:  # fenced: the lease was lost meanwhile; the Hub already moved on
                log.info("task %s: result not recorded: %s", task.id, e)
        finally:
            self.running.pop(task.id, None)
            self._slot.set()

    async def _report(self, task: LeasedTask, ref: LeaseRef, result: ExecResult) -> None:
        """Tell the Hub how the task ended. While no Hub answers, keep trying (the run's data is already
        in the store): the result is reported when a Hub returns, under the same lease if it still
        holds, and a lease that moved on meanwhile refuses it (fenced), which ends the trying."""
        wait_s = REPORT_RETRY_MIN_S
        while True:
            try:
                if result.release:
                    await self.port.release(
                        ref, count_attempt=result.count_attempt, reason=result.release
                    )
                elif result.wait_for:
                    await self.port.suspend(ref, result.wait_for)
                else:
                    await self.port.complete(ref, result.status, result.outcome, result.error)
                return
            except UnavailableError as e:
                if task.id in self.lost or not e.details.get("hub"):  # only an unreachable Hub
                    raise
                log.warning(
                    "task %s ended but no Hub answers (%s); reporting again in %.1fs",
                    task.id,
                    e,
                    wait_s,
                )
                await asyncio.sleep(wait_s)
                wait_s = next_backoff(wait_s, REPORT_RETRY_MIN_S, REPORT_RETRY_MAX_S)

    async def _execute(self, task: LeasedTask, ref: LeaseRef) -> ExecResult | None:
        try:
            return await self.executor.run(task)
        except asyncio.CancelledError:
            if task.id in self.lost:
                return None  # cancelled or re-leased by the Hub: nothing to report
            with contextlib.suppress(AgenError):  # drained: give it back, its run resumes elsewhere
                await self.port.release(
                    ref, count_attempt=False, reason="instance stopped while the task ran"
                )
            return None
        except (
            FencedError
        ) as e:  # normal after a lease moved on: another holder owns the run; nothing to report
            log.info("task %s: fenced off, another holder owns its run now: %s", task.id, e)
            return None
        except Exception as e:
            if isinstance(
                e, AgenError
            ):  # a store that cannot write, a Hub that refused: said, not a bug
                log.error("task %s failed inside the instance: %s", task.id, e)
            else:
                log.exception("task %s failed inside the instance", task.id)
            return ExecResult.crashed(e)

    def lease_lost(self, task_id: str) -> None:
        """The Hub cancelled the task or its lease moved on: stop its run without reporting."""
        entry = self.running.get(task_id)
        if entry is not None:
            self.lost.add(task_id)
            entry[1].cancel()

    def fail(self, reason: str) -> None:
        """The executor cannot take more work (its host exited or hung): stop; the Manager replaces it."""
        if self.exit_reason is None:
            self.exit_reason = reason
        self.stop_leasing()
        self.state = "failed"

    def stop_leasing(self) -> None:
        if self.state not in ("stopped", "failed"):
            self.state = "draining"
        self._stop_leasing.set()
        self._slot.set()

    async def drain(self, timeout_s: float, *, stop_runs: bool = False) -> None:
        """Stop leasing, let running tasks finish (up to the timeout), then stop the rest: their
        tasks go back to the queue and their runs resume from where they stopped.

        ``stop_runs`` (the Nest is shutting down): each run only finishes its current step, then
        its task goes back to the queue and resumes from its checkpoint later.
        """
        self.stop_leasing()
        if stop_runs:
            with contextlib.suppress(Exception):
                await self.executor.drain()
        if self._main is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._main
        pending = [t for _, t in self.running.values()]
        if pending:
            _, still = await asyncio.wait(pending, timeout=timeout_s)
            if still and not stop_runs:
                # Held first: a run stopped now is given back and resumes later, so it must not
                # end itself cancelled (agen.runner.loop: a held run's stop writes no end).
                with contextlib.suppress(Exception):
                    await self.executor.drain()
            for t in still:
                t.cancel()
            if still:
                await asyncio.wait(still)
        with contextlib.suppress(Exception):
            await self.executor.close()
        self.state = "stopped"

    def refs(self) -> list[LeaseRef]:
        return [ref for ref, _ in self.running.values()]

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "deployment": self.assignment.deployment,
            "state": self.state,
            "in_flight": len(self.running),
        }
