"""Everything the tools side gives a Runner for one bundle, built in one call.

Secrets resolved (values registered with the redactor), one McpToolset per mcp.json
server, the bundle's permission policy and the per-run extras (workspace, memory, the
built-in workspace tools).
A Runner factory passes these straight to ``Runner(...)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agen.bundle import Bundle
from agen.bundle.checks import WORKSPACE, workspace_builtins
from agen.bundle.standard import StdioServer
from agen.runner.extras import RunExtras
from agen.runner.permissions import BundlePolicy
from agen.runner.redact import Redactor
from agen.runner.sandboxing import (
    EgressEvents,
    EventOrigin,
    Sandboxing,
    run_policy,
    server_policy,
)
from agen.runner.secrets import ResolvedSecrets, resolve_secrets
from agen.runner.tools.base import ToolContext, Toolset
from agen.runner.tools.fetch import FetchToolset
from agen.runner.tools.mcp import LoginNeededHook, McpToolset
from agen.runner.tools.mcp_conn import uses_workspace
from agen.runner.tools.workspace import WorkspaceToolset
from agen.runner.workspace import workspace_path
from agen.store.base import Store


@dataclass
class Tooling:
    redactor: Redactor
    secrets: ResolvedSecrets
    toolsets: list[Toolset]
    policy: BundlePolicy
    extras: RunExtras


def build_tooling(
    bundle: Bundle,
    store: Store,
    *,
    namespace: str = "default",
    deployment: str | None = None,
    redactor: Redactor | None = None,
    environ: Mapping[str, str] | None = None,
    platform_secrets: Mapping[str, str] | None = None,
) -> Tooling:
    """Resolve secrets and build the MCP toolsets, policy and extras (nothing is started yet).

    A server whose args use ``${WORKSPACE}`` works in one run's directory, so it is started per
    run by the extras (on the per-task or per-conversation workspace, once that exists) and
    closed when the run ends; with a ``shared`` workspace it lives as long as the Runner. The
    built-in workspace tools (``builtinTools.workspace``) are per run the same way, on every mode.
    """
    redactor = redactor or Redactor()
    dep = deployment or bundle.name
    secrets = resolve_secrets(
        bundle.secrets, redactor, environ=environ, platform=platform_secrets, deployment=dep
    )
    mode = bundle.config.workspace.mode
    login_needed = login_needed_event(store)
    spec = bundle.harness.sandbox

    def mcp_toolset(name: str, workspace: str | None, origin: EventOrigin) -> McpToolset:
        server = bundle.mcp.mcp_servers[name]
        policy = server_policy(spec, name) if isinstance(server, StdioServer) else None
        what = f"mcp.json server {name!r}"
        return McpToolset(
            name,
            server,
            secrets,
            redactor,
            bundle.config.tools.get(name),
            workspace=workspace,
            cwd_base=bundle.root,
            sandbox=Sandboxing(policy, what, EgressEvents(store, origin, f"server {name}"))
            if policy is not None
            else None,
            env_grant=tuple(spec.for_server(name).env),
            on_login_needed=login_needed,
        )

    toolsets: list[Toolset] = []
    per_run: list[str] = []
    for name, server in bundle.mcp.mcp_servers.items():
        ws = None
        if uses_workspace(server):
            if mode != "shared":
                per_run.append(name)
                continue
            path = workspace_path(
                mode,
                namespace=namespace,
                deployment=dep,
                run_id="shared",
                task_id=None,
                conversation_key=None,
            )
            path.mkdir(parents=True, exist_ok=True)
            ws = str(path)
        toolsets.append(mcp_toolset(name, ws, EventOrigin(namespace, dep)))

    if bundle.config.builtin_tools.fetch is not None:
        toolsets.append(FetchToolset(bundle.config.builtin_tools.fetch))
    builtins = workspace_builtins(bundle.config, bundle.mcp)
    run_sandbox = run_policy(spec)

    def run_toolsets(workspace: str | None, origin: EventOrigin) -> list[Toolset]:
        own: list[Toolset] = []
        if builtins and workspace is not None:
            box = (
                Sandboxing(
                    run_sandbox,
                    "the workspace run tool",
                    EgressEvents(store, origin, "workspace.run"),
                )
                if run_sandbox is not None
                else None
            )
            hints = bundle.config.tools.get(WORKSPACE)
            own.append(WorkspaceToolset(workspace, builtins, hints, box))
        return own + [mcp_toolset(name, workspace, origin) for name in per_run]

    policy = BundlePolicy(bundle.config.permissions, store=store)
    extras = RunExtras(
        bundle, store, redactor, run_toolsets=run_toolsets if per_run or builtins else None
    )
    return Tooling(redactor, secrets, toolsets, policy, extras)


def login_needed_event(store: Store) -> LoginNeededHook:
    """An ``mcp.login_needed`` warning event for a call that failed because its server's OAuth login
    (``agen mcp login``) expired and could not be refreshed: the one thing a person must do."""

    async def record(ctx: ToolContext, server: str, message: str) -> None:
        await store.write(
            lambda tx: tx.event(
                ctx.namespace,
                "mcp.login_needed",
                severity="warning",
                deployment=ctx.deployment,
                task_id=ctx.task_id,
                run_id=ctx.run_id,
                data={"server": server, "message": message},
            )
        )

    return record
