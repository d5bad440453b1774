"""The default executor: the engine (agen.runner.Runner) over the instance's bundle."""

from __future__ import annotations

from typing import Any

from agen.bundle import Bundle
from agen.nest.executor import ExecResult, run_request, status_of
from agen.nest.port import LeasedTask
from agen.store import Store


class RunnerExecutor:
    """One Runner per instance; it serves the instance's concurrent runs."""

    def __init__(self, runner: Any) -> None:
        self.runner = runner

    async def run(self, task: LeasedTask) -> ExecResult:
        result = await self.runner.run(run_request(task))
        outcome = result.outcome.model_dump(mode="json")
        error = None if result.status == "succeeded" else (outcome.get("summary") or outcome.get("reason"))
        return ExecResult(status=status_of(result.status), outcome=outcome, error=error,
                          wait_for=getattr(result, "wait_for", None))

    async def close(self) -> None:
        await self.runner.close()


def runner_factory(store: Store, *, fake_delay_s: float = 0.0) -> Any:
    """An ExecutorFactory building each instance's Runner (the runner factory wires tools and policy)."""

    async def build(bundle: Bundle, instance_id: str) -> RunnerExecutor:
        from agen.runner.loop import Runner

        runner = Runner(store, bundle, owner=f"instance:{instance_id}", fake_delay_s=fake_delay_s)
        await runner.start()
        return RunnerExecutor(runner)

    return build
