"""A fake Executor the test drives (each run ends when the test says so), and a condition wait."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from agen.bundle import Bundle
from agen.domain import Outcome, OutcomeStatus
from agen.nest.executor import ExecResult
from agen.nest.port import LeasedTask

DONE = ExecResult(status="succeeded", outcome=Outcome(status=OutcomeStatus.DONE, summary="done"))


class FakeExecutor:
    """Implements agen.nest.executor.Executor: ``run`` waits until ``finish(task_id)``; ``drain`` gives
    every run back (as the runner does at its next checkpoint); ``die`` makes it report an exit."""

    def __init__(self) -> None:
        self.runs: dict[str, asyncio.Future[ExecResult]] = {}
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.drained = False
        self.closed = False
        self.dead: str | None = None

    async def run(self, task: LeasedTask) -> ExecResult:
        fut: asyncio.Future[ExecResult] = asyncio.get_running_loop().create_future()
        self.runs[task.id] = fut
        self.started.append(task.id)
        try:
            return await fut
        except asyncio.CancelledError:
            self.cancelled.append(task.id)
            raise

    def finish(self, task_id: str, result: ExecResult = DONE) -> None:
        self.runs[task_id].set_result(result)

    async def drain(self) -> None:
        self.drained = True
        for fut in self.runs.values():
            if not fut.done():
                fut.set_result(
                    ExecResult(status="released", outcome=None, release="drained: resumes later")
                )

    def exit_reason(self) -> str | None:
        return self.dead

    async def close(self) -> None:
        self.closed = True


class Factory:
    """An ExecutorFactory that hands out FakeExecutors, or raises ``fail`` while it is set."""

    def __init__(self) -> None:
        self.executors: list[FakeExecutor] = []
        self.attempts = 0
        self.fail: str | None = None
        self.platform_secrets: dict[str, str] = {}

    async def __call__(
        self, bundle: Bundle, instance_id: str, platform_secrets: Mapping[str, str]
    ) -> FakeExecutor:
        self.platform_secrets = dict(platform_secrets)
        self.attempts += 1
        if self.fail is not None:
            raise RuntimeError(self.fail)
        ex = FakeExecutor()
        self.executors.append(ex)
        return ex


async def until(check: Callable[[], Any], what: str, timeout_s: float = 10.0) -> None:
    """Wait for a condition (never a fixed sleep); fail naming it after a generous deadline."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)
