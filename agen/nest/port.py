"""HubPort: everything a Nest asks of the Hub, so in-process and remote Hubs are interchangeable.

The Manager only pulls (assignments, leases) and reports (instances, results); the Hub never
calls into a Nest. ``ClientHubPort`` (agen.nest.client_port) is the one real implementation: the
Nest-facing RPCs over agen.client, in-process or HTTP alike. ``FakeHubPort`` (agen.testing.fake_hub_port) is
the scripted one for tests. The shapes come from the API models, never from ``agen.hub``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from agen.domain import Outcome
from agen.domain.live import LiveEvent
from agen.wire.nests import (
    START_FAILED,
    Assignment,
    InstanceReport,
    LeasedTask,
    LeaseExtension,
    LeaseRef,
)

__all__ = [
    "START_FAILED",
    "Assignment",
    "HubPort",
    "InstanceReport",
    "LeaseExtension",
    "LeaseRef",
    "LeasedTask",
]


class HubPort(Protocol):
    async def register(
        self, name: str, capacity: int, labels: dict[str, str], *, gateway_url: str | None = None
    ) -> str:
        """Enrol this Nest (and say where its A2A Gateway is, if it runs one); returns its id."""

    async def report(
        self, nest_id: str, instances: list[InstanceReport], *, saturated: list[str] | None = None
    ) -> list[Assignment]:
        """Heartbeat with instance states (and the deployments whose A2A callers wait on full
        instances); returns the latest assignments of this Nest."""

    async def definition_files(self, definition_id: str) -> dict[str, bytes]: ...

    async def platform_secrets(self, nest_id: str, deployment_id: str) -> dict[str, str]:
        """The platform secret values a deployment assigned to this Nest declares and is granted."""

    async def lease(
        self, nest_id: str, instance_id: str, deployment_id: str, limit: int, lease_ms: int
    ) -> list[LeasedTask]: ...

    async def mark_running(self, lease: LeaseRef) -> None: ...

    async def extend(self, leases: list[LeaseRef], lease_ms: int) -> list[LeaseExtension]:
        """Extend many leases at once; answers each: extended, lost (stop its run) or finished."""

    async def complete(
        self, lease: LeaseRef, status: str, outcome: Outcome | None, error: str | None = None
    ) -> None:
        """The task's run ended (CompleteTask carries the outcome as its JSON)."""

    async def release(self, lease: LeaseRef, *, count_attempt: bool, reason: str) -> None: ...

    async def suspend(self, lease: LeaseRef, wait_for: str) -> None: ...

    async def report_progress(self, task_id: str, progress: dict[str, Any]) -> None:
        """The built-in report_progress tool's latest value for a running task."""

    async def wait_for_work(self, seen: int, timeout_s: float) -> int:
        """Return early when tasks may have become leasable since generation ``seen``; the new generation."""

    async def token_keys(self) -> list[str]:
        """The Hub's call-token public keys (raw Ed25519, base64): a Gateway verifies callers with them."""

    def on_cancel(self, listener: Callable[[str], None]) -> None:
        """Called with a task id when the Hub cancels a task (a hint; lease loss is the rule)."""

    def shares_live_bus(self) -> bool:
        """The Hub runs in this process and reads this process's live bus itself (``agen up``, an
        embedded ``agen run``): the Manager forwards nothing, or every event would show twice."""

    async def publish_live(self, events: list[LiveEvent]) -> list[tuple[int, str]]:
        """A batch of this process's live events for a Hub in another process (PublishLive); what
        of it was refused, as (events, why) per task (empty: all published). Best effort: the
        caller drops a batch that fails."""
