"""Named locks with durable fencing tokens (seed 000 §5 "Tasks", locks).

``locks`` is what is granted now (one task per namespace and name); ``lock_fences``
is a separate counter per name that advances only when the lock passes to a
different task, never on a re-grant or refresh to the same one, and keeps
climbing across release/re-acquire, so a tool server can remember the highest
token it has seen and reject writes tagged with a stale one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from agen.domain import columns
from agen.errors import ConflictError, InvalidError, NotFoundError
from agen.store import Tx
from agen.store.pg_locks import lock_keys

MAX_LOCK_NAME = 200


def check_lock_names(names: Iterable[str]) -> list[str]:
    """Distinct, valid lock names in first-seen order (InvalidError on an empty or long one)."""
    out: list[str] = []
    for name in names:
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_LOCK_NAME:
            raise InvalidError(
                f"lock name {name!r} is not valid: use a non-empty name of at most {MAX_LOCK_NAME} characters",
                field="locks",
            )
        if name not in out:
            out.append(name)
    return out


def _holder(tx: Tx, namespace: str, name: str, task_id: str, now_ms: int) -> str | None:
    """The other task holding ``name`` now (an expired grant holds nothing)."""
    holder = tx.scalar(
        "SELECT task_id FROM locks WHERE namespace = ? AND name = ? AND task_id != ? AND expires_ms > ?",
        (namespace, name, task_id, now_ms),
    )
    return None if holder is None else str(holder)


class _Grant(NamedTuple):
    """A lock granted now (``locks``): to which task, under which fence."""

    task_id: str
    fence: int


class _Fence(NamedTuple):
    """A lock name's fence counter (``lock_fences``) and the task it last passed to."""

    fence: int
    last_task_id: str


def _grant(tx: Tx, namespace: str, name: str, task_id: str, expires_ms: int) -> int:
    """Grant a lock known to be free for this task; returns its fence."""
    cur = tx.row(
        _Grant,
        f"SELECT {columns(_Grant)} FROM locks WHERE namespace = ? AND name = ?",
        (namespace, name),
    )
    if cur is not None and cur.task_id == task_id:
        tx.execute(
            "UPDATE locks SET expires_ms = MAX(expires_ms, ?) WHERE namespace = ? AND name = ?",
            (expires_ms, namespace, name),
        )
        return cur.fence
    f = tx.row(
        _Fence,
        f"SELECT {columns(_Fence)} FROM lock_fences WHERE namespace = ? AND name = ?",
        (namespace, name),
    )
    if f is None:
        fence = 1
        tx.execute(
            "INSERT INTO lock_fences (namespace, name, fence, last_task_id) VALUES (?,?,?,?)",
            (namespace, name, fence, task_id),
        )
    elif f.last_task_id == task_id:
        fence = f.fence
    else:
        fence = f.fence + 1
        tx.execute(
            "UPDATE lock_fences SET fence = ?, last_task_id = ? WHERE namespace = ? AND name = ?",
            (fence, task_id, namespace, name),
        )
    tx.execute(
        "INSERT INTO locks (namespace, name, task_id, fence, expires_ms) VALUES (?,?,?,?,?)"
        " ON CONFLICT (namespace, name) DO UPDATE SET task_id = excluded.task_id,"
        " fence = excluded.fence, expires_ms = excluded.expires_ms",
        (namespace, name, task_id, fence, expires_ms),
    )
    tx.event(namespace, "lock.granted", task_id=task_id, data={"name": name, "fence": fence})
    return fence


def try_grant_all(
    tx: Tx,
    namespace: str,
    names: Iterable[str],
    task_id: str,
    expires_ms: int,
    *,
    now_ms: int | None = None,
) -> dict[str, int] | None:
    """Grant every name at once (all or nothing): name -> fence, or None when any is held elsewhere."""
    now = tx.now_ms if now_ms is None else now_ms
    wanted = list(names)
    lock_keys(tx, *(f"lock:{namespace}:{n}" for n in wanted))  # the holder is read, then replaced
    if any(_holder(tx, namespace, n, task_id, now) for n in wanted):
        return None
    return {n: _grant(tx, namespace, n, task_id, expires_ms) for n in wanted}


def acquire_lock(tx: Tx, namespace: str, name: str, task_id: str, ttl_ms: int) -> int | None:
    """Grant ``name`` to a leased/running task for ``ttl_ms``; its fence, or None if another task holds it."""
    (name,) = check_lock_names([name])
    if ttl_ms <= 0:
        raise InvalidError(f"lock ttl must be positive (got {ttl_ms} ms)", field="ttl")
    state = tx.scalar(f"SELECT state FROM tasks WHERE id = ?{tx.row_lock}", (task_id,))
    if state is None:
        raise NotFoundError(
            f"task {task_id} not found; a lock is held by a running task", task_id=task_id
        )
    if state not in ("leased", "running"):
        raise ConflictError(
            f"task {task_id} is {state}; only a leased or running task can acquire lock {name!r}",
            task_id=task_id,
            lock=name,
        )
    lock_keys(tx, f"lock:{namespace}:{name}")  # the holder is read, then replaced
    if _holder(tx, namespace, name, task_id, tx.now_ms):
        return None
    return _grant(tx, namespace, name, task_id, tx.now_ms + ttl_ms)


def release_lock(tx: Tx, namespace: str, name: str, task_id: str) -> bool:
    """Drop a lock the task holds (True if it held it); the fence counter is kept."""
    n = tx.execute(
        "DELETE FROM locks WHERE namespace = ? AND name = ? AND task_id = ?",
        (namespace, name, task_id),
    )
    if n:
        tx.event(namespace, "lock.released", task_id=task_id, data={"name": name})
    return n > 0


def release_task_locks(tx: Tx, task_id: str) -> int:
    """Release every lock a task holds (declared or mid-run); every path that ends a lease calls this."""
    return tx.execute("DELETE FROM locks WHERE task_id = ?", (task_id,))


def refresh_task_locks(tx: Tx, task_id: str, expires_ms: int) -> int:
    """Keep a task's locks at least as long as its extended lease."""
    return tx.execute(
        "UPDATE locks SET expires_ms = MAX(expires_ms, ?) WHERE task_id = ?", (expires_ms, task_id)
    )


def held_locks(tx: Tx, task_id: str) -> dict[str, int]:
    """The locks a task holds now: name -> fence."""
    rows = tx.rows(
        _HeldLock, "SELECT name, fence FROM locks WHERE task_id = ? ORDER BY name", (task_id,)
    )
    return {r.name: r.fence for r in rows}


class _HeldLock(NamedTuple):
    name: str
    fence: int
