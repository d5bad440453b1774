"""The in-process HubPort: direct calls into the Hub's queue functions, no HTTP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agen.errors import AgenError
from agen.hub import queue
from agen.hub.definitions import get_definition_files
from agen.hub.instances import Assignment, InstanceReport, register_nest, report_status
from agen.hub.lease_gate import complete_from_nest, lease_for_nest
from agen.hub.service import Hub
from agen.nest.port import LeasedTask, LeaseRef
from agen.store import Tx, loads


def leased_from_row(row: dict[str, Any], *, started: bool = False) -> LeasedTask:
    locks = row.get("locks") or {}
    return LeasedTask(
        id=row["id"], lease_id=row["lease_id"], namespace=row["namespace"], deployment=row["deployment"],
        deployment_id=row["deployment_id"], input=row["input"], attempts=int(row.get("attempts") or 0),
        conversation_key=row.get("conversation_key"), labels=loads(row.get("labels"), {}) or {},
        trust=row.get("trust") or "trusted", source=row.get("source") or "api", model_tier=row.get("model_tier"),
        overrides=loads(row.get("overrides")), budget_pressure=bool(row.get("budget_pressure")),
        root_run_id=row.get("root_run_id"), submitted_by=row.get("submitted_by"),
        locks=dict(locks) if isinstance(locks, dict) else {}, started=started, traceparent=row.get("traceparent"),
    )


class InProcessHubPort:
    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    async def register(self, name: str, capacity: int, labels: dict[str, str]) -> str:
        return await self.hub.store.write(lambda tx: register_nest(tx, name, capacity=capacity, labels=labels))

    async def report(self, nest_id: str, instances: list[InstanceReport]) -> list[Assignment]:
        return await self.hub.store.write(lambda tx: report_status(tx, nest_id, instances))

    async def definition_files(self, definition_id: str) -> dict[str, bytes]:
        return await get_definition_files(self.hub.store, definition_id)

    async def lease(
        self, nest_id: str, instance_id: str, deployment_id: str, limit: int, lease_ms: int
    ) -> list[LeasedTask]:
        if self.hub.draining:
            return []
        rows = await self.hub.store.write(lambda tx: lease_for_nest(
            tx, deployment_id=deployment_id, nest_id=nest_id, instance_id=instance_id, limit=limit, lease_ms=lease_ms,
            start=True))
        return [leased_from_row(r, started=True) for r in rows]

    async def mark_running(self, lease: LeaseRef) -> None:
        await self.hub.store.write(lambda tx: queue.mark_running(tx, lease.task_id, lease.lease_id))

    async def extend(self, leases: list[LeaseRef], lease_ms: int) -> list[str]:
        def fn(tx: Tx) -> list[str]:
            lost = []
            for ref in leases:
                try:
                    queue.extend_lease(tx, ref.task_id, ref.lease_id, lease_ms)
                except AgenError:
                    lost.append(ref.task_id)
            return lost

        return await self.hub.store.write(fn) if leases else []

    async def complete(
        self, lease: LeaseRef, status: str, outcome: dict[str, Any] | None, error: str | None = None
    ) -> None:
        await self.hub.store.write(lambda tx: complete_from_nest(
            tx, lease.task_id, lease.lease_id, status=status, outcome=outcome, error=error))

    async def release(self, lease: LeaseRef, *, count_attempt: bool, reason: str) -> None:
        await self.hub.store.write(lambda tx: queue.release_task(
            tx, lease.task_id, lease.lease_id, count_attempt=count_attempt, reason=reason))
        self.hub.work.notify()

    async def suspend(self, lease: LeaseRef, wait_for: str) -> None:
        await self.hub.store.write(lambda tx: queue.suspend_task(tx, lease.task_id, lease.lease_id, wait_for))

    async def wait_for_work(self, seen: int, timeout_s: float) -> int:
        return await self.hub.work.wait(seen, timeout_s)

    def on_cancel(self, listener: Callable[[str], None]) -> None:
        self.hub.on_cancel(listener)
