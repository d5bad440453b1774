"""Leasing and ending tasks: lease, run, extend, complete, release, suspend, expire, cancel.

Every lease carries a fresh ``lease_id`` (a ULID fencing token); ExtendLease,
CompleteTask, ReleaseTask and SuspendTask must present the current one, so a
partitioned Nest cannot finish a task that was re-leased elsewhere. The SQL
selects candidates and then updates each with ``WHERE state = 'queued'`` so the
same code is correct under Postgres ``FOR UPDATE SKIP LOCKED``.
"""

from __future__ import annotations

from typing import Any

from agen.store import Tx

MAX_ATTEMPTS = 5


def lease_tasks(
    tx: Tx,
    *,
    deployment_id: str,
    nest_id: str,
    instance_id: str | None,
    limit: int,
    lease_ms: int,
    now_ms: int | None = None,
) -> list[dict[str, Any]]:
    """Lease up to ``limit`` due tasks of one deployment (priority, then submission order).

    Skips scheduled, held and lock-blocked tasks and every task whose conversation has
    an older due task or an unfinished one. Returned rows carry ``lease_id`` and
    ``locks`` (name -> fence).
    """
    raise NotImplementedError


def mark_running(tx: Tx, task_id: str, lease_id: str) -> dict[str, Any]:
    """The instance started the task (leased -> running)."""
    raise NotImplementedError


def extend_lease(tx: Tx, task_id: str, lease_id: str, lease_ms: int) -> int:
    """Push the lease (and the task's declared locks) to now + lease_ms; returns the new expiry."""
    raise NotImplementedError


def complete_task(
    tx: Tx,
    task_id: str,
    lease_id: str,
    *,
    status: str,
    outcome: dict[str, Any] | None,
    error: str | None = None,
) -> dict[str, Any]:
    """End a leased/running task as succeeded, failed or cancelled; releases its locks."""
    raise NotImplementedError


def release_task(
    tx: Tx, task_id: str, lease_id: str, *, count_attempt: bool, reason: str | None = None
) -> dict[str, Any]:
    """Give a leased task back to the queue (a host could not take it: attempt not counted)."""
    raise NotImplementedError


def suspend_task(tx: Tx, task_id: str, lease_id: str, wait_for: str) -> dict[str, Any]:
    """The run suspended: the task gives up its lease and waits for ``wait_for`` ("<kind>:<ref>")."""
    raise NotImplementedError


def expire_leases(tx: Tx, now_ms: int) -> list[dict[str, Any]]:
    """Requeue tasks whose lease expired; the 5th expiry fails the task and fences its run."""
    raise NotImplementedError


def expire_overdue(tx: Tx, now_ms: int) -> list[str]:
    """Queued tasks past not_after end as expired; returns their ids."""
    raise NotImplementedError


def cancel_task(tx: Tx, task_id: str, *, by: str | None, reason: str | None = None) -> dict[str, Any]:
    """Hard cancel: ends the task and its unfinished run (epoch+1), releases its locks."""
    raise NotImplementedError
