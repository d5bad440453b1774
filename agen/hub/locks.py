"""Named locks with durable fencing tokens (seed 000 §5 "Tasks", locks).

``locks`` is what is granted now (one task per namespace and name); ``lock_fences``
is a separate counter per name that advances only when the lock passes to a
different task, so a tool server can reject writes tagged with a stale token.
"""

from __future__ import annotations

from collections.abc import Iterable

from agen.store import Tx


def acquire_lock(tx: Tx, namespace: str, name: str, task_id: str, ttl_ms: int) -> int | None:
    """Grant ``name`` to a leased/running task for ``ttl_ms``; its fence, or None if another task holds it."""
    raise NotImplementedError


def release_lock(tx: Tx, namespace: str, name: str, task_id: str) -> bool:
    """Drop a lock the task holds (True if it held it); the fence counter is kept."""
    raise NotImplementedError


def try_grant_all(tx: Tx, namespace: str, names: Iterable[str], task_id: str, expires_ms: int) -> dict[str, int] | None:
    """Grant every name at once (all or nothing): name -> fence, or None when any is held elsewhere."""
    raise NotImplementedError


def release_task_locks(tx: Tx, task_id: str) -> int:
    """Release every lock a task holds (declared or mid-run); every terminal path calls this."""
    raise NotImplementedError


def held_locks(tx: Tx, task_id: str) -> dict[str, int]:
    """The locks a task holds now: name -> fence."""
    raise NotImplementedError
