"""FakeHubPort: a scripted Hub for Manager and Instance tests, with no Store and no HTTP.

It serves the assignments and queued tasks a test puts in, fences reports by lease id the way
the Hub does (a stale lease is a FencedError), and records every call in ``calls`` so a test
can say what the Nest asked for. ``lose_lease`` and ``cancel`` play the Hub moving on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agen.bundle import digest_files
from agen.domain import Outcome
from agen.domain.live import LiveEvent
from agen.errors import FencedError, NotFoundError, UnavailableError
from agen.store import new_ulid
from agen.wire.nests import Assignment, InstanceReport, LeasedTask, LeaseExtension, LeaseRef

AGENT_FILES: dict[str, bytes] = {
    "plugin.json": json.dumps({"name": "fake", "version": "0.1.0"}).encode(),
    "x-agen/agent.md": b"---\nname: fake\n---\nYou echo.\n",
    "x-agen/harness.json": json.dumps({"provider": "fake", "fake": {"echo": True}}).encode(),
}


@dataclass
class Call:
    method: str
    args: dict[str, Any] = field(default_factory=dict)


class FakeHubPort:
    """A HubPort whose Hub is a few dicts. ``unreachable = True`` makes every call fail as a down Hub."""

    def __init__(self, nest_id: str = "nest-fake") -> None:
        self.nest_id = nest_id
        self.assignments: list[Assignment] = []
        self.files: dict[str, dict[str, bytes]] = {}
        self.secrets: dict[str, dict[str, str]] = {}  # deployment id -> platform secret values
        self.queued: dict[str, list[LeasedTask]] = {}  # deployment id -> tasks waiting for a lease
        self.leases: dict[str, str] = {}  # task id -> its live lease id
        self.completed: dict[str, tuple[str, Outcome | None, str | None]] = {}
        self.released: dict[str, tuple[bool, str]] = {}  # task id -> (count_attempt, reason)
        self.suspended: dict[str, str] = {}
        self.progress: dict[str, dict[str, Any]] = {}
        self.reports: list[list[InstanceReport]] = []
        self.saturated: list[list[str]] = []  # each report's saturated deployments
        self.gateway_url: str | None = None  # what register was told
        self.calls: list[Call] = []
        self.unreachable = False
        self.call_token_keys: list[str] = []  # what token_keys() answers (set by a test)
        self.generation = 0
        self._work = asyncio.Event()
        self._cancel_listeners: list[Callable[[str], None]] = []
        self.hub_in_process = True
        """shares_live_bus: a Hub reading this process's bus (nothing forwarded); False plays a
        Hub in another process, which gets the Manager's batches of live events in ``live``."""
        self.live: list[list[LiveEvent]] = []  # the batches of live events published to this Hub

    # -- scripting ------------------------------------------------------------------------

    def deploy(
        self,
        name: str = "d",
        *,
        count: int = 1,
        max_concurrency: int = 4,
        kind: str = "pool",
        config: dict[str, Any] | None = None,
    ) -> Assignment:
        """Assign ``count`` instances of a small valid bundle (fake provider) to this Nest."""
        files = dict(AGENT_FILES)
        files["x-agen/config.json"] = json.dumps(config or {"kind": kind}).encode()
        digest = digest_files(files)
        a = Assignment(
            deployment_id=f"dep-{name}",
            namespace="default",
            deployment=name,
            definition_id=f"{name}@{digest}",
            digest=digest,
            count=count,
            max_concurrency=max_concurrency,
            paused=False,
            kind=kind,
        )
        self.files[a.definition_id] = files
        self.assignments = [x for x in self.assignments if x.deployment_id != a.deployment_id] + [a]
        return a

    def scale(self, deployment_id: str, count: int) -> None:
        self.assignments = [
            a.model_copy(update={"count": count}) if a.deployment_id == deployment_id else a
            for a in self.assignments
        ]

    def submit(self, deployment_id: str, text: str = "hi") -> str:
        a = next(a for a in self.assignments if a.deployment_id == deployment_id)
        task = LeasedTask(
            id=new_ulid(),
            lease_id="",
            namespace=a.namespace,
            deployment=a.deployment,
            deployment_id=deployment_id,
            input=text,
        )
        self.queued.setdefault(deployment_id, []).append(task)
        self._notify()
        return task.id

    def lose_lease(self, task_id: str) -> None:
        """The lease expired or the task was re-leased elsewhere: reports with the old lease id are fenced."""
        self.leases.pop(task_id, None)

    def cancel(self, task_id: str) -> None:
        """The Hub cancelled the task: the lease is void, and local listeners get the hint."""
        self.lose_lease(task_id)
        for listener in self._cancel_listeners:
            listener(task_id)

    def calls_of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def _notify(self) -> None:
        self.generation += 1
        event, self._work = self._work, asyncio.Event()
        event.set()

    def _call(self, method: str, **args: Any) -> None:
        self.calls.append(Call(method, args))
        if self.unreachable:
            raise UnavailableError("the fake Hub is unreachable (FakeHubPort.unreachable)")

    def _fenced(self, lease: LeaseRef) -> None:
        if self.leases.get(lease.task_id) != lease.lease_id:
            raise FencedError(
                f"lease {lease.lease_id} of task {lease.task_id} is no longer current",
                task_id=lease.task_id,
                lease_id=lease.lease_id,
            )

    # -- HubPort --------------------------------------------------------------------------

    async def register(
        self, name: str, capacity: int, labels: dict[str, str], *, gateway_url: str | None = None
    ) -> str:
        self._call("register", name=name, capacity=capacity, labels=labels)
        self.gateway_url = gateway_url
        return self.nest_id

    async def report(
        self, nest_id: str, instances: list[InstanceReport], *, saturated: list[str] | None = None
    ) -> list[Assignment]:
        self._call("report", nest_id=nest_id, instances=instances)
        self.reports.append(list(instances))
        self.saturated.append(list(saturated or []))
        return list(self.assignments)

    async def definition_files(self, definition_id: str) -> dict[str, bytes]:
        self._call("definition_files", definition_id=definition_id)
        if definition_id not in self.files:
            raise NotFoundError(
                f"definition {definition_id} is not in the fake Hub", definition=definition_id
            )
        return dict(self.files[definition_id])

    async def platform_secrets(self, nest_id: str, deployment_id: str) -> dict[str, str]:
        self._call("platform_secrets", nest_id=nest_id, deployment_id=deployment_id)
        return dict(self.secrets.get(deployment_id, {}))

    async def lease(
        self, nest_id: str, instance_id: str, deployment_id: str, limit: int, lease_ms: int
    ) -> list[LeasedTask]:
        self._call(
            "lease",
            nest_id=nest_id,
            instance_id=instance_id,
            deployment_id=deployment_id,
            limit=limit,
            lease_ms=lease_ms,
        )
        queue = self.queued.get(deployment_id, [])
        taken, self.queued[deployment_id] = queue[:limit], queue[limit:]
        out = []
        for task in taken:
            lease_id = new_ulid()
            self.leases[task.id] = lease_id
            out.append(
                task.model_copy(
                    update={"lease_id": lease_id, "attempts": task.attempts + 1, "started": True}
                )
            )
        return out

    async def mark_running(self, lease: LeaseRef) -> None:
        self._call("mark_running", lease=lease)
        self._fenced(lease)

    async def extend(self, leases: list[LeaseRef], lease_ms: int) -> list[LeaseExtension]:
        self._call("extend", leases=list(leases), lease_ms=lease_ms)
        return [
            LeaseExtension(task_id=ref.task_id, status="extended")
            if self.leases.get(ref.task_id) == ref.lease_id
            else LeaseExtension(task_id=ref.task_id, status="finished")
            if ref.task_id in self.completed
            else LeaseExtension(task_id=ref.task_id, status="lost", detail="lost (FakeHubPort)")
            for ref in leases
        ]

    async def complete(
        self, lease: LeaseRef, status: str, outcome: Outcome | None, error: str | None = None
    ) -> None:
        self._call("complete", lease=lease, status=status, outcome=outcome, error=error)
        self._fenced(lease)
        del self.leases[lease.task_id]
        self.completed[lease.task_id] = (status, outcome, error)

    async def release(self, lease: LeaseRef, *, count_attempt: bool, reason: str) -> None:
        self._call("release", lease=lease, count_attempt=count_attempt, reason=reason)
        self._fenced(lease)
        del self.leases[lease.task_id]
        self.released[lease.task_id] = (count_attempt, reason)

    async def suspend(self, lease: LeaseRef, wait_for: str) -> None:
        self._call("suspend", lease=lease, wait_for=wait_for)
        self._fenced(lease)
        del self.leases[lease.task_id]
        self.suspended[lease.task_id] = wait_for

    async def report_progress(self, task_id: str, progress: dict[str, Any]) -> None:
        self._call("report_progress", task_id=task_id, progress=progress)
        self.progress[task_id] = dict(progress)

    async def wait_for_work(self, seen: int, timeout_s: float) -> int:
        if self.generation == seen and timeout_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._work.wait(), timeout=timeout_s)
        return self.generation

    async def token_keys(self) -> list[str]:
        return list(self.call_token_keys)

    def on_cancel(self, listener: Callable[[str], None]) -> None:
        self._cancel_listeners.append(listener)

    def shares_live_bus(self) -> bool:
        return self.hub_in_process

    async def publish_live(self, events: list[LiveEvent]) -> list[tuple[int, str]]:
        if self.unreachable:
            raise UnavailableError("the fake Hub is unreachable (FakeHubPort.unreachable)")
        self.live.append(list(events))
        return []
