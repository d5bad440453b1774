"""The one real HubPort: the Nest-facing RPCs over agen.client, in-process or over HTTP alike.

``Client.in_process(hub, principal)`` and ``Client.http(url, token)`` run the same calls through
the same registry, scope check and handlers, so a Nest beside its Hub and one on another machine
differ only in the client they were given. One in-process fast path remains, for a hint only:
a cancelled task's run stops at once when the Hub is in this process (``on_cancel``); over HTTP
the next lease extension finds the lease lost, which is the rule either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from agen.api import registry as r
from agen.client import Client, InProcessTransport
from agen.domain import Outcome
from agen.domain.live import LiveEvent
from agen.wire import nests as m
from agen.wire.common import Empty


class ClientHubPort:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def register(
        self, name: str, capacity: int, labels: dict[str, str], *, gateway_url: str | None = None
    ) -> str:
        resp = await self.client.call(
            r.RegisterNest,
            m.RegisterNestRequest(
                name=name, capacity=capacity, labels=labels, gateway_url=gateway_url
            ),
        )
        self._bind(resp.nest_id)
        return resp.nest_id

    def _bind(self, nest_id: str) -> None:
        """The Nest in the Hub's own process starts with a credential bound to no Nest (it registers by
        name); once registered it acts only as that Nest, like an enrolled one (its token names it)."""
        transport = self.client.transport
        if (
            isinstance(transport, InProcessTransport)
            and transport.principal.kind == "nest"
            and transport.principal.nest_id is None
        ):
            transport.principal = dataclasses.replace(transport.principal, nest_id=nest_id)

    async def report(
        self, nest_id: str, instances: list[m.InstanceReport], *, saturated: list[str] | None = None
    ) -> list[m.Assignment]:
        resp = await self.client.call(
            r.ReportNest,
            m.ReportNestRequest(nest_id=nest_id, instances=instances, saturated=saturated or []),
        )
        return resp.assignments

    async def definition_files(self, definition_id: str) -> dict[str, bytes]:
        resp = await self.client.call(
            r.GetDefinitionFiles, m.GetDefinitionFilesRequest(definition_id=definition_id)
        )
        return dict(resp.files)

    async def platform_secrets(self, nest_id: str, deployment_id: str) -> dict[str, str]:
        from agen.wire.secrets import GetPlatformSecretsRequest

        resp = await self.client.call(
            r.GetPlatformSecrets,
            GetPlatformSecretsRequest(nest_id=nest_id, deployment_id=deployment_id),
        )
        return dict(resp.values)

    async def lease(
        self, nest_id: str, instance_id: str, deployment_id: str, limit: int, lease_ms: int
    ) -> list[m.LeasedTask]:
        resp = await self.client.call(
            r.LeaseTasks,
            m.LeaseTasksRequest(
                nest_id=nest_id,
                instance_id=instance_id,
                deployment_id=deployment_id,
                limit=limit,
                lease_ms=lease_ms,
            ),
        )
        return resp.tasks

    async def mark_running(self, lease: m.LeaseRef) -> None:
        await self.client.call(r.MarkRunning, m.MarkRunningRequest(lease=lease))

    async def extend(self, leases: list[m.LeaseRef], lease_ms: int) -> list[m.LeaseExtension]:
        answers: list[m.LeaseExtension] = []
        for i in range(0, len(leases), m.MAX_LEASES):
            resp = await self.client.call(
                r.ExtendLeases,
                m.ExtendLeasesRequest(leases=leases[i : i + m.MAX_LEASES], lease_ms=lease_ms),
            )
            answers += resp.leases
        return answers

    async def complete(
        self,
        lease: m.LeaseRef,
        status: str,
        outcome: Outcome | None,
        error: str | None = None,
    ) -> None:
        stored = None if outcome is None else outcome.model_dump(mode="json")
        await self.client.call(
            r.CompleteTask,
            m.CompleteTaskRequest(lease=lease, status=status, outcome=stored, error=error),
        )

    async def release(self, lease: m.LeaseRef, *, count_attempt: bool, reason: str) -> None:
        await self.client.call(
            r.ReleaseTask,
            m.ReleaseTaskRequest(lease=lease, count_attempt=count_attempt, reason=reason),
        )

    async def suspend(self, lease: m.LeaseRef, wait_for: str) -> None:
        await self.client.call(r.SuspendTask, m.SuspendTaskRequest(lease=lease, wait_for=wait_for))

    async def report_progress(self, task_id: str, progress: dict[str, Any]) -> None:
        await self.client.call(
            r.ReportProgress, m.ReportProgressRequest(task_id=task_id, progress=progress)
        )

    async def wait_for_work(self, seen: int, timeout_s: float) -> int:
        resp = await self.client.call(
            r.WaitForWork, m.WaitForWorkRequest(seen=seen, wait_seconds=timeout_s)
        )
        return resp.generation

    async def token_keys(self) -> list[str]:
        resp = await self.client.call(r.GetTokenKeys, Empty())
        return [k.public_key for k in resp.keys]

    def shares_live_bus(self) -> bool:
        return isinstance(self.client.transport, InProcessTransport)

    async def publish_live(self, events: list[LiveEvent]) -> list[tuple[int, str]]:
        resp = await self.client.call(
            r.PublishLive, m.PublishLiveRequest(events=[m.LiveEventWire.of(e) for e in events])
        )
        return [(x.events, x.reason) for x in resp.refused]

    def on_cancel(self, listener: Callable[[str], None]) -> None:
        transport = self.client.transport
        if isinstance(
            transport, InProcessTransport
        ):  # the hint's fast path; remote Nests rely on lease loss
            transport.hub.on_cancel(listener)
