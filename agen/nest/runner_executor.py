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


def build_runner(store: Store, bundle: Bundle, owner: str, *, fake_delay_s: float = 0.0) -> Any:
    """A managed Runner: the bundle's MCP servers, its permission rules, durable approvals."""
    from agen.runner.approvals import StoreApprovalGate
    from agen.runner.loop import Runner
    from agen.runner.permissions import BundlePolicy
    from agen.runner.redact import Redactor
    from agen.runner.secrets import resolve_secrets
    from agen.runner.tools.mcp import McpToolset

    redactor = Redactor()
    secrets = resolve_secrets(bundle.secrets, redactor)
    toolsets = [
        McpToolset(name, server, secrets, redactor, bundle.config.tools.get(name), cwd_base=bundle.root)
        for name, server in bundle.mcp.mcp_servers.items()
    ]
    return Runner(store, bundle, owner=owner, toolsets=list(toolsets),
                  policy=BundlePolicy(bundle.config.permissions, store=store), gate=StoreApprovalGate(store),
                  redactor=redactor, fake_delay_s=fake_delay_s)


def runner_factory(store: Store, *, fake_delay_s: float = 0.0) -> Any:
    """An ExecutorFactory building each instance's Runner (started once, serving concurrent runs)."""

    async def build(bundle: Bundle, instance_id: str) -> RunnerExecutor:
        runner = build_runner(store, bundle, f"instance:{instance_id}", fake_delay_s=fake_delay_s)
        try:
            await runner.start()
        except BaseException:
            await runner.close()
            raise
        return RunnerExecutor(runner)

    return build
