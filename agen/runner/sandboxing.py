"""The sandbox of one toolset: its policy from harness.json, the egress proxy, and its events.

A toolset that starts processes (the built-in workspace tools' ``run``, a stdio MCP server) holds
one ``Sandboxing``. Before its first process it checks that bubblewrap works here and, when the
policy allows hosts, starts the egress proxy; each command is then wrapped in bwrap (agen/sandbox)
and started with its limits. A per-run toolset's proxy lives as long as the run (its events carry
the run); a server that serves a Runner's every run has one for the Runner's life. There is no
fallback: without bubblewrap the start fails with the install command and the opt-out, and the
process is never started unconfined.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Any

from agen.bundle.sandbox import Sandbox, SandboxFiles, SandboxLimits, SandboxNetwork
from agen.errors import UnavailableError
from agen.sandbox.bwrap import INSTALL, Launch, availability, bwrap_argv, egress_env
from agen.sandbox.policy import Limits, Policy
from agen.sandbox.proxy import Decision, EgressProxy, Traffic
from agen.store.base import Store

log = logging.getLogger("agen.sandbox")

MAX_DECISION_EVENTS = 200
"""Decisions recorded as events per proxy; later ones are only counted (in sandbox.traffic)."""
OPT_OUT = 'or set "sandbox": {"enabled": false} in x-agen/harness.json to run unconfined'


@dataclass(frozen=True)
class EventOrigin:
    """Whose events the sandbox writes: the deployment, and the run when it is per run."""

    namespace: str
    deployment: str
    task_id: str | None = None
    run_id: str | None = None


def _expand(paths: list[str]) -> tuple[str, ...]:
    return tuple(os.path.expanduser(p) for p in paths)


def _policy(files: SandboxFiles, network: SandboxNetwork, limits: SandboxLimits) -> Policy:
    return Policy(
        read=_expand(files.read),
        write=_expand(files.write),
        allow=tuple(network.allow),
        limits=Limits(limits.cpu_seconds, limits.memory_mb),
    )


def run_policy(spec: Sandbox) -> Policy | None:
    """The policy of the workspace ``run`` tool's commands (None: sandbox turned off)."""
    return _policy(spec.filesystem, spec.network, spec.limits) if spec.enabled else None


def server_policy(spec: Sandbox, name: str) -> Policy | None:
    """The policy of mcp.json stdio server ``name`` (its own settings over the bundle's)."""
    if not spec.server_enabled(name):
        return None
    own = spec.for_server(name)
    return _policy(
        own.filesystem or spec.filesystem, own.network or spec.network, own.limits or spec.limits
    )


class EgressEvents:
    """Writes the egress proxy's decisions as ``sandbox.egress`` events and, at the end, one
    ``sandbox.traffic`` event with the requests and bytes counted."""

    def __init__(self, store: Store, origin: EventOrigin, what: str) -> None:
        self.store = store
        self.origin = origin
        self.what = what
        self._written = 0
        self._pending: set[asyncio.Task[Any]] = set()

    def _event(self, type_: str, severity: str, data: dict[str, Any]) -> None:
        o = self.origin

        def fn(tx: Any) -> None:
            tx.event(
                o.namespace,
                type_,
                severity=severity,
                deployment=o.deployment,
                task_id=o.task_id,
                run_id=o.run_id,
                data={"sandbox": self.what, **data},
            )

        task = asyncio.get_running_loop().create_task(self.store.write(fn))
        self._pending.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("sandbox event not recorded: %s", task.exception())

    def decision(self, d: Decision) -> None:
        if self._written >= MAX_DECISION_EVENTS:
            return
        self._written += 1
        data: dict[str, Any] = {
            "host": d.host,
            "port": d.port,
            "method": d.method,
            "allowed": d.allowed,
        }
        if d.reason:
            data["reason"] = d.reason
        self._event("sandbox.egress", "info" if d.allowed else "warning", data)

    async def close(self, traffic: Traffic) -> None:
        self._event(
            "sandbox.traffic",
            "info",
            {
                "allowed": traffic.allowed,
                "denied": traffic.denied,
                "bytes_out": traffic.bytes_out,
                "bytes_in": traffic.bytes_in,
                "hosts": dict(traffic.hosts),
            },
        )
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)


class Sandboxing:
    """One toolset's sandbox: its policy, and its egress proxy once a process needs it."""

    def __init__(self, policy: Policy, what: str, events: EgressEvents | None = None) -> None:
        self.policy = policy
        self.what = what
        self.events = events
        self.bwrap: str | None = None
        self.proxy: EgressProxy | None = None
        self._preparing = asyncio.Lock()

    async def prepare(self) -> None:
        """Check bubblewrap (once), start the proxy if hosts are allowed; fails without bubblewrap.
        Calls that overlap (parallel tool calls) wait for one another: one proxy per sandbox."""
        async with self._preparing:
            await self._prepare()

    async def _prepare(self) -> None:
        if self.bwrap is None:
            found = await asyncio.to_thread(availability)
            if not found.ok or found.path is None:
                raise UnavailableError(
                    f"{self.what} runs in the sandbox, which cannot start here: {found.detail}; "
                    f"{OPT_OUT}"
                )
            self.bwrap = found.path
        if self.policy.network and self.proxy is None:
            proxy = EgressProxy(self.policy.allow, self.events.decision if self.events else None)
            await proxy.start()
            self.proxy = proxy

    def command(self, command: list[str], launch: Launch) -> list[str]:
        """``command`` wrapped in bwrap for this policy (after ``prepare``)."""
        if self.bwrap is None:
            raise RuntimeError("Sandboxing.prepare was not awaited")
        socket = self.proxy.socket_path if self.proxy else None
        launch = dataclasses.replace(launch, egress_socket=socket)
        return bwrap_argv(self.bwrap, self.policy, launch, command)

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """What the process gets: ``env``, TMPDIR in the sandbox's /tmp, the proxy's variables."""
        out = {**env, "TMPDIR": "/tmp"}
        if self.proxy is not None:
            out.update(egress_env())
        return out

    async def close(self) -> None:
        if self.proxy is not None:
            proxy, self.proxy = self.proxy, None
            await proxy.close()
            if self.events is not None:
                with contextlib.suppress(Exception):
                    await self.events.close(proxy.traffic)


def missing_sandbox(parts: list[str]) -> str | None:
    """Why a bundle whose ``parts`` run sandboxed cannot run here (None: it can, or needs none)."""
    if not parts:
        return None
    found = availability()
    if found.ok:
        return None
    verb = "runs" if len(parts) == 1 else "run"
    return f"{' and '.join(parts)} {verb} in the sandbox, which cannot start here: {found.detail}; {OPT_OUT}"


__all__ = ["INSTALL", "EventOrigin", "Sandboxing", "missing_sandbox", "run_policy", "server_policy"]
