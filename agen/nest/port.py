"""HubPort: everything a Manager asks of the Hub, so in-process and remote Hubs are interchangeable.

The Manager only pulls (assignments, leases) and reports (instances, results); the Hub never
calls into a Nest. ``InProcessHubPort`` (agen.nest.inproc) is the local one; an HTTP port
over agen.client speaks the same methods to a remote Hub.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agen.hub.instances import Assignment, InstanceReport

__all__ = ["Assignment", "HubPort", "InstanceReport", "LeaseRef", "LeasedTask"]


@dataclass
class LeasedTask:
    """A task this Nest holds a lease on; ``lease_id`` is the fencing token every report presents."""

    id: str
    lease_id: str
    namespace: str
    deployment: str
    deployment_id: str
    input: str
    attempts: int = 0
    conversation_key: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    trust: str = "trusted"
    source: str = "api"
    model_tier: str | None = None
    overrides: dict[str, Any] | None = None
    budget_pressure: bool = False
    root_run_id: str | None = None
    submitted_by: str | None = None
    locks: dict[str, int] = field(default_factory=dict)
    traceparent: str | None = None  # W3C, from the submitter: the run joins that trace
    started: bool = False        # leased straight into running (no separate mark_running)


@dataclass(frozen=True)
class LeaseRef:
    task_id: str
    lease_id: str


class HubPort(Protocol):
    async def register(self, name: str, capacity: int, labels: dict[str, str]) -> str:
        """Enrol this Nest; returns its id."""

    async def report(self, nest_id: str, instances: list[InstanceReport]) -> list[Assignment]:
        """Heartbeat with instance states; returns the latest assignments of this Nest."""

    async def definition_files(self, definition_id: str) -> dict[str, bytes]: ...

    async def lease(
        self, nest_id: str, instance_id: str, deployment_id: str, limit: int, lease_ms: int
    ) -> list[LeasedTask]: ...

    async def mark_running(self, lease: LeaseRef) -> None: ...

    async def extend(self, leases: list[LeaseRef], lease_ms: int) -> list[str]:
        """Extend many leases at once; returns the ids of tasks whose lease was lost."""

    async def complete(
        self, lease: LeaseRef, status: str, outcome: dict[str, Any] | None, error: str | None = None
    ) -> None: ...

    async def release(self, lease: LeaseRef, *, count_attempt: bool, reason: str) -> None: ...

    async def suspend(self, lease: LeaseRef, wait_for: str) -> None: ...

    async def wait_for_work(self, seen: int, timeout_s: float) -> int:
        """Return early when tasks may have become leasable since generation ``seen``; the new generation."""

    def on_cancel(self, listener: Callable[[str], None]) -> None:
        """Called with a task id when the Hub cancels a task (a hint; lease loss is the rule)."""
