"""Leasing and ending tasks: lease, run, extend, complete, release, suspend, expire, cancel.

Every lease carries a fresh ``lease_id`` (a ULID fencing token); ExtendLease,
CompleteTask, ReleaseTask and SuspendTask must present the current one, so a
partitioned Nest cannot finish a task that was re-leased elsewhere. The SQL
selects candidates and then updates each with ``WHERE state = 'queued'``, so the
same code stays correct under Postgres ``FOR UPDATE SKIP LOCKED``.

``attempts`` counts leases that did not end cleanly plus the current one: a lease
adds one; a release the host could not use and a suspend give it back. A lease lost with its
host (expired, voided by the Nest's restart, released by a host that died) is judged by what
the run did during it (``judge_lost_lease``):

- the run recorded progress: not counted (a crash is not the task's fault while it was moving);
- the run never started (no run opened or resumed since the lease began): not an attempt either,
  the loss is the host's; it counts in ``lost_before_start`` instead, and a task whose lease kills
  its host every time still ends, after MAX_LOST_BEFORE_START such losses;
- the run started and made no progress: an attempt, and the MAX_ATTEMPTS-th fails the task.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from agen.domain import (
    LIVE,
    TERMINAL,
    LeasedTaskRow,
    Outcome,
    OutcomeStatus,
    RunStatus,
    TaskRow,
    TaskState,
    columns,
)
from agen.domain.approvals import close_task_approvals
from agen.errors import InvalidError
from agen.hub.queue.holds import RESUME, _effectively_held, inbox_matches, write_inbox
from agen.hub.queue.locks import refresh_task_locks, release_task_locks, try_grant_all
from agen.hub.queue.tasks import (
    ABANDON,
    TaskId,
    deployment_log,
    due_sql,
    end_run,
    fence_run,
    fenced_task,
    get_task,
    held_sql,
    joined_unfinished_children,
    requeue,
    stale_lease,
    task_event,
)
from agen.store import Tx, dumps
from agen.store.base import new_ulid
from agen.store.pg_locks import lock_keys
from agen.store.records import read, read_all

MAX_ATTEMPTS = 5
MAX_LOST_BEFORE_START = 15
"""Leases lost with their host before the run started, before the task fails: higher than MAX_ATTEMPTS
because such a loss says more about the host than the task (a crash under load takes every lease it
held), yet finite, so a task that kills its host before its run opens still ends."""
COMPLETE_STATES = (TaskState.SUCCEEDED, TaskState.FAILED, TaskState.CANCELLED)

# Head-of-conversation rule: no other unfinished task of the key is in flight, and none
# older is due (a not_before task does not hold its conversation up).
CONVERSATION_FREE_SQL = f"""
    (t.conversation_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM tasks o
        WHERE o.deployment_id = t.deployment_id AND o.conversation_key = t.conversation_key
          AND o.state IN ('queued', 'leased', 'running', 'waiting') AND o.id != t.id
          AND (o.state != 'queued' OR (o.seq < t.seq AND {due_sql("o")}))))
"""

_CANDIDATES = f"""
    SELECT t.* FROM tasks t
    WHERE t.deployment_id = :dep AND t.state = 'queued'
      AND {due_sql("t")}
      AND NOT {held_sql("t")}
      AND (t.priority > :p OR (t.priority = :p AND t.seq > :s))
      AND {CONVERSATION_FREE_SQL}
    ORDER BY t.priority, t.seq
    LIMIT :page
"""
# Postgres: lock the candidates, passing over rows another transaction holds (another leasing write), so
# two leasers never wait on each other or lease one task twice; the deployment's pause flag and each
# candidate's declared lock names come in the same round trip. SQLite's single writer needs no row locks.
_CANDIDATES_LOCKED = (
    _CANDIDATES.replace(
        "SELECT t.* FROM tasks t",
        "SELECT t.*, ARRAY(SELECT l.name FROM task_locks l WHERE l.task_id = t.id ORDER BY l.name)"
        " AS lock_names FROM tasks t",
    ).replace(
        "WHERE t.deployment_id = :dep AND t.state = 'queued'",
        "WHERE t.deployment_id = :dep AND t.state = 'queued'"
        " AND NOT EXISTS (SELECT 1 FROM deployments d WHERE d.id = :dep AND d.paused != 0)",
    )
    + " FOR UPDATE OF t SKIP LOCKED"
)


def lease_tasks(
    tx: Tx,
    *,
    deployment_id: str,
    nest_id: str,
    instance_id: str | None,
    limit: int,
    lease_ms: int,
    now_ms: int | None = None,
    start: bool = False,
    skip: Callable[[TaskRow], bool] | None = None,
) -> list[LeasedTaskRow]:
    """Lease up to ``limit`` due tasks of one deployment (priority, then submission order).

    ``start=True`` leases straight into running (a caller that dispatches at once saves the
    mark_running transaction; its one task.started event carries the lease id, Nest, instance and attempt). ``skip`` passes over candidates
    the caller must not lease now (an exhausted label budget), leaving them queued untouched.

    Skips scheduled, held and lock-blocked tasks and every task whose conversation has
    an older due task or an unfinished one; a paused deployment leases nothing. Returned
    rows carry ``lease_id`` and ``locks`` (name -> fence).
    """
    if limit <= 0:
        return []
    if lease_ms <= 0:
        raise InvalidError(f"lease_ms must be positive (got {lease_ms})", field="lease_ms")
    now = tx.now_ms if now_ms is None else now_ms
    postgres = tx.dialect == "postgres"
    if not postgres and tx.scalar("SELECT paused FROM deployments WHERE id = ?", (deployment_id,)):
        return []
    leased: list[LeasedTaskRow] = []
    cursor = (-1, -1)
    # Every fetched row costs, and blocked ones are rare: grow the page only when needed. On Postgres each
    # fetched row also stays locked to this transaction's end, hidden from the other leasers: fetch no more.
    page = limit if postgres else limit + 4
    while len(leased) < limit:
        params = {"dep": deployment_id, "now": now, "p": cursor[0], "s": cursor[1], "page": page}
        free: set[str] | None = None
        if postgres:
            # One statement, two row types: each candidate's task and its declared lock names.
            found = tx.all(_CANDIDATES_LOCKED, params)
            if not found:
                break
            rows = read_all(TaskRow, found)  # lock_names is not a column: ignored
            declared = {c.id: list(c.lock_names or ()) for c in read_all(_LockNames, found)}
            free = _decide_under_keys(tx, rows, declared, now)
        else:
            rows = tx.rows(TaskRow, _CANDIDATES, params)
            if not rows:
                break
            declared = _declared_locks(tx, [r.id for r in rows])
        cursor = (rows[-1].priority, rows[-1].seq)
        for row in rows:
            if skip is not None and skip(row):
                continue
            if free is not None and row.id not in free:
                continue
            got = _lease_one(
                tx,
                row,
                declared.get(row.id, []),
                nest_id,
                instance_id,
                now + lease_ms,
                now,
                start,
            )
            if got is not None:
                leased.append(got)
                if len(leased) >= limit:
                    break
        if len(rows) < page:
            break
        page = min(page * 2, 512)
    return leased


class _LockNames(NamedTuple):
    """A Postgres lease candidate's declared lock names (``_CANDIDATES_LOCKED``'s extra column)."""

    id: str
    lock_names: list[str] | None


def _decide_under_keys(
    tx: Tx, rows: list[TaskRow], declared: dict[str, list[str]], now: int
) -> set[str]:
    """Postgres: the ids of the locked candidates that may be leased as far as their conversation goes.

    The candidate query ran on a snapshot and skipped rows other leases hold, so a conversation's head and
    a named lock's holder are decided from rows this write has not locked. For the candidates that have
    either, take the keys (agen.store.pg_locks: a lease deciding about the same conversation or lock name
    waits for this one to end) and read their conversations again: that statement sees every lease that
    held a key before. Named locks are then granted under their keys (``try_grant_all``)."""
    keyed = [r for r in rows if r.conversation_key or declared.get(r.id)]
    if not keyed:
        return {r.id for r in rows}
    lock_keys(
        tx,
        *(
            f"conversation:{r.deployment_id}:{r.conversation_key}"
            for r in keyed
            if r.conversation_key
        ),
        *(f"lock:{r.namespace}:{name}" for r in keyed for name in declared.get(r.id, ())),
    )
    talking = [r.id for r in keyed if r.conversation_key]
    still: set[str] = set()
    if talking:
        names = [f"i{i}" for i in range(len(talking))]
        still = {
            r.id
            for r in tx.rows(
                TaskId,
                f"SELECT t.id FROM tasks t WHERE t.id IN ({', '.join(':' + n for n in names)})"
                f" AND {CONVERSATION_FREE_SQL}",
                {"now": now, **dict(zip(names, talking, strict=True))},
            )
        }
    return {r.id for r in rows if not r.conversation_key or r.id in still}


class _TaskLock(NamedTuple):
    """A lock name a task declared (``task_locks``)."""

    task_id: str
    name: str


def _declared_locks(tx: Tx, task_ids: list[str]) -> dict[str, list[str]]:
    marks = ",".join("?" * len(task_ids))
    out: dict[str, list[str]] = {}
    for r in tx.rows(
        _TaskLock,
        f"SELECT {columns(_TaskLock)} FROM task_locks WHERE task_id IN ({marks}) ORDER BY name",
        task_ids,
    ):
        out.setdefault(r.task_id, []).append(r.name)
    return out


def _lease_one(
    tx: Tx,
    row: TaskRow,
    lock_names: list[str],
    nest_id: str,
    instance_id: str | None,
    expires_ms: int,
    now: int,
    start: bool,
) -> LeasedTaskRow | None:
    """Lease one candidate; None when its locks or another writer took it."""
    grants: dict[str, int] = {}
    if lock_names:
        got = try_grant_all(tx, row.namespace, lock_names, row.id, expires_ms, now_ms=now)
        if got is None:
            return None
        grants = got
    lease_id = new_ulid()
    state = TaskState.RUNNING if start else TaskState.LEASED
    started = (row.started_ms or tx.now_ms) if start else row.started_ms
    n = tx.execute(
        "UPDATE tasks SET state = ?, lease_id = ?, lease_nest_id = ?, lease_instance_id = ?,"
        " lease_expires_ms = ?, leased_ms = ?, attempts = attempts + 1, wait_reason = NULL, started_ms = ?,"
        " updated_ms = ? WHERE id = ? AND state = 'queued'",
        (state, lease_id, nest_id, instance_id, expires_ms, now, started, tx.now_ms, row.id),
    )
    if n == 0:  # taken by another writer between select and update (Postgres)
        if grants:
            release_task_locks(tx, row.id)
        return None
    leased = row._replace(
        state=state,
        lease_id=lease_id,
        lease_nest_id=nest_id,
        lease_instance_id=instance_id,
        lease_expires_ms=expires_ms,
        leased_ms=now,
        attempts=row.attempts + 1,
        wait_reason=None,
        started_ms=started,
        updated_ms=tx.now_ms,
    )
    # Leased straight into running, nobody can see the leased state: one task.started event carries the lease.
    task_event(
        tx,
        leased,
        "task.started" if start else "task.leased",
        {
            "lease_id": lease_id,
            "nest_id": nest_id,
            "instance_id": instance_id,
            "attempt": leased.attempts,
        },
    )
    return LeasedTaskRow(leased, lease_id, grants)


def mark_running(tx: Tx, task_id: str, lease_id: str) -> TaskRow:
    """The instance started the task (leased -> running); repeating it is harmless."""
    row = fenced_task(tx, task_id, lease_id)
    if row.state == TaskState.RUNNING:
        return row
    tx.execute(
        "UPDATE tasks SET state = 'running', started_ms = COALESCE(started_ms, ?), updated_ms = ? WHERE id = ?",
        (tx.now_ms, tx.now_ms, task_id),
    )
    task_event(
        tx, row, "task.started", {"lease_id": lease_id, "instance_id": row.lease_instance_id}
    )
    return row._replace(
        state=TaskState.RUNNING,
        started_ms=row.started_ms or tx.now_ms,
        updated_ms=tx.now_ms,
    )


def extend_lease(tx: Tx, task_id: str, lease_id: str, lease_ms: int) -> int:
    """Push the lease (and the task's granted locks) to now + lease_ms; returns the new expiry."""
    fenced_task(tx, task_id, lease_id)
    return _push_lease(tx, task_id, lease_ms)


def _push_lease(tx: Tx, task_id: str, lease_ms: int) -> int:
    expires = tx.now_ms + lease_ms
    tx.execute(
        "UPDATE tasks SET lease_expires_ms = ?, updated_ms = ? WHERE id = ?",
        (expires, tx.now_ms, task_id),
    )
    refresh_task_locks(tx, task_id, expires)
    return expires


class LeaseAnswer(StrEnum):
    """What extending one of a Nest's leases found (agen.wire.nests.LeaseExtension)."""

    EXTENDED = "extended"
    LOST = "lost"  # the Nest holds the task no more: its run must stop
    # the task ended under this very lease: its completion crossed the extension
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class Extension:
    task_id: str
    answer: LeaseAnswer
    expires_ms: int | None = None
    detail: str | None = None  # a lost lease: where the task is now


def extend_leases(
    tx: Tx, leases: list[tuple[str, str]], lease_ms: int, *, nest_id: str | None
) -> list[Extension]:
    """Extend every lease (task id, lease id) a Nest still holds and answer each on its own, so a lease
    that moved on while the Nest was cut off never keeps its others from being extended. ``nest_id``:
    the Nest a bound credential names (None: the Hub's own Nest); a task leased to another Nest is lost
    to this one, whatever lease id it names."""
    if not leases:
        return []
    ids = sorted({task_id for task_id, _ in leases})
    marks = ",".join("?" * len(ids))
    rows = {
        r.id: r
        for r in tx.rows(
            _LeaseHolder,
            "SELECT t.id, t.state, t.lease_id, t.lease_nest_id, n.name AS nest FROM tasks t"
            f" LEFT JOIN nests n ON n.id = t.lease_nest_id WHERE t.id IN ({marks})",
            ids,
        )
    }
    out: list[Extension] = []
    for task_id, lease_id in leases:
        r = rows.get(task_id)
        state = None if r is None else r.state
        if r is not None and r.lease_id == lease_id and state in TERMINAL:
            out.append(Extension(task_id, LeaseAnswer.FINISHED))
        elif (
            r is not None
            and r.lease_id == lease_id
            and state in LIVE
            and (nest_id is None or r.lease_nest_id == nest_id)
        ):
            out.append(Extension(task_id, LeaseAnswer.EXTENDED, _push_lease(tx, task_id, lease_ms)))
        else:
            out.append(Extension(task_id, LeaseAnswer.LOST, detail=_where_now(r, state)))
    return out


class _LeaseHolder(NamedTuple):
    """Who holds a task's lease now, for a Nest's extension of it."""

    id: str
    state: TaskState
    lease_id: str | None
    lease_nest_id: str | None
    nest: str | None  # the Nest's name (LEFT JOIN)


def _where_now(r: _LeaseHolder | None, state: TaskState | None) -> str:
    if r is None or state is None:
        return "no such task"
    if state in LIVE:
        return f"leased again, by nest {r.nest or r.lease_nest_id}"
    if state == TaskState.QUEUED:
        return "back in the queue"
    return f"{state}"


_FINISH_SQL = (
    "UPDATE tasks SET state = ?, outcome = ?, error = ?, lease_id = CASE WHEN ? THEN lease_id END,"
    " lease_nest_id = NULL, lease_instance_id = NULL, lease_expires_ms = NULL, wait_for = NULL,"
    " finished_ms = ?, updated_ms = ? WHERE id = ?"
)


def finish_task(
    tx: Tx,
    row: TaskRow,
    state: TaskState,
    *,
    outcome: dict[str, Any] | None,
    error: str | None,
    keep_lease_id: bool = False,
    data: dict[str, Any] | None = None,
) -> None:
    """The one terminal path: state, locks released, pending approvals closed, the event, the parent's inbox,
    and the task's joined children cancelled unless it set on_parent_end "abandon"."""
    tx.execute(
        _FINISH_SQL,
        (
            state,
            None if outcome is None else dumps(outcome),
            error,
            keep_lease_id,
            tx.now_ms,
            tx.now_ms,
            row.id,
        ),
    )
    _finished(tx, row, state, outcome, error, data)


class _FinishNeeds(NamedTuple):
    """What a finished task still has to have cleaned up (known from the finishing statement's RETURNING;
    all True when unknown): a task that held no lock, waited on no approval and has no unfinished child
    needs none of the three statements."""

    has_locks: bool = True
    has_approvals: bool = True
    has_children: bool = True


# Columns of the finishing UPDATE's RETURNING that say which _FinishNeeds apply (one index probe each
# instead of a statement each).
_FINISH_NEEDS_SQL = (
    "EXISTS (SELECT 1 FROM locks l WHERE l.task_id = tasks.id) AS has_locks,"
    " EXISTS (SELECT 1 FROM approvals a WHERE a.task_id = tasks.id AND a.state = 'pending')"
    " AS has_approvals,"
    " EXISTS (SELECT 1 FROM tasks c WHERE c.parent_task_id = tasks.id AND c.reply_deployment IS NULL"
    " AND c.state IN ('queued', 'leased', 'running', 'waiting')) AS has_children"
)


_FINISH_FENCED_SQL = (
    _FINISH_SQL
    + " AND lease_id = ? AND state IN ('leased', 'running') RETURNING *, "
    + _FINISH_NEEDS_SQL
)
"""complete_task's one statement, built once: text built per call is hashed again by sqlite3's
statement cache on every execution."""


def _finished(
    tx: Tx,
    row: TaskRow,
    state: TaskState,
    outcome: dict[str, Any] | None,
    error: str | None,
    data: dict[str, Any] | None = None,
    *,
    needs: _FinishNeeds = _FinishNeeds(),
) -> None:
    if needs.has_locks:
        release_task_locks(tx, row.id)
    if needs.has_approvals:
        close_task_approvals(tx, row.id, state, (data or {}).get("by"))
    task_event(
        tx,
        row,
        f"task.{state}",
        {"error": error, **(data or {})},
        severity="warning" if state in (TaskState.FAILED, TaskState.EXPIRED) else "info",
    )
    if row.parent_task_id:
        write_inbox(
            tx,
            row.parent_task_id,
            "child",
            row.id,
            {"task_id": row.id, "status": state, "outcome": outcome, "error": error},
        )
    # on_parent_end "cancel" (the default): the joined branch unwinds with its parent
    if needs.has_children and row.on_parent_end != ABANDON:
        for child in joined_unfinished_children(tx, row.id):
            cancel_task(
                tx,
                child.id,
                by="hub",
                reason=f"its parent task {row.id} ended ({state}); on_parent_end is cancel",
            )
    if row.reply_deployment:
        # Here, not at the top: a reply is a submit, and submit ends a task its schedule key replaces
        # through this path (submit imports lease), a real recursion between the two.
        from agen.hub.queue.delegation import reply_to_caller

        reply_to_caller(tx, row, state, outcome)


def _finish_fenced(
    tx: Tx,
    task_id: str,
    lease_id: str,
    state: TaskState,
    outcome: dict[str, Any] | None,
    error: str | None,
) -> TaskRow | None:
    """complete_task's common case in one statement: the update only matches while ``lease_id`` is the
    task's live lease, and returns the finished row; None when it did not match (read and decide why).
    One statement, two row types: the finished task and what it still needs (``_FinishNeeds``)."""
    row = tx.one(
        _FINISH_FENCED_SQL,
        (
            state,
            None if outcome is None else dumps(outcome),
            error,
            True,
            tx.now_ms,
            tx.now_ms,
            task_id,
            lease_id,
        ),
    )
    if row is None:
        return None
    needs = read(_FinishNeeds, row)
    done = read(TaskRow, row)  # the needs' columns are not the task's: ignored
    _finished(tx, done, state, outcome, error, needs=needs)
    return done


def complete_task(
    tx: Tx,
    task_id: str,
    lease_id: str,
    *,
    status: str,
    outcome: dict[str, Any] | None,
    error: str | None = None,
) -> TaskRow:
    """End a leased/running task as succeeded, failed or cancelled; releases its locks.

    Reporting the same lease's completion twice returns the stored task (a retried RPC).
    """
    if status not in COMPLETE_STATES:
        raise InvalidError(
            f"status must be one of {', '.join(COMPLETE_STATES)} (got {status!r})", field="status"
        )
    state = TaskState(status)
    done = _finish_fenced(tx, task_id, lease_id, state, outcome, error)
    if done is not None:
        return done
    row = get_task(tx, task_id)
    if row.state in TERMINAL and row.lease_id == lease_id:
        return row
    if row.lease_id != lease_id or row.state not in LIVE:
        raise stale_lease(row, lease_id)
    finish_task(tx, row, state, outcome=outcome, error=error, keep_lease_id=True)
    return row._replace(
        state=state,
        outcome=None if outcome is None else dumps(outcome),
        error=error,
        lease_nest_id=None,
        lease_instance_id=None,
        lease_expires_ms=None,
        wait_for=None,
        finished_ms=tx.now_ms,
        updated_ms=tx.now_ms,
    )


def release_task(
    tx: Tx, task_id: str, lease_id: str, *, count_attempt: bool, reason: str | None = None
) -> TaskRow:
    """Give a leased task back to the queue.

    ``count_attempt=False``: the host could not take it (not its fault, not counted).
    ``count_attempt=True``: the host died mid-task; a task already at MAX_ATTEMPTS fails.
    """
    row = fenced_task(tx, task_id, lease_id)
    why = reason or ("host could not take it" if not count_attempt else "host stopped mid-task")
    if not count_attempt:
        deployment_log(
            tx,
            row,
            f"task {task_id} released by instance {row.lease_instance_id or '-'}: {why}"
            " (attempt not counted)",
            instance_id=row.lease_instance_id,
        )
        requeue(
            tx,
            row,
            reason=why,
            attempt_delta=-1,
            event="task.released",
            data={"count_attempt": False},
        )
        return get_task(tx, task_id)
    loss = judge_lost_lease(tx, row)
    deployment_log(
        tx,
        row,
        f"task {task_id} released by instance {row.lease_instance_id or '-'}: {why}"
        f"{_LOSS_NOTE[loss]}",
        instance_id=row.lease_instance_id,
    )
    _after_lost_lease(tx, row, loss, why, event="task.released", data={})
    return get_task(tx, task_id)


class LeaseLoss(StrEnum):
    """What a lease lost with its host (expired, voided, its host died) says about the task."""

    PROGRESSED = "progressed"  # the run recorded progress during it: not counted
    NOT_STARTED = "not_started"  # the run never started during it: the host's loss, not an attempt
    ATTEMPT = "attempt"  # the run started and made no progress: an attempt


_LOSS_NOTE = {
    LeaseLoss.PROGRESSED: "; the run made progress (attempt not counted)",
    LeaseLoss.NOT_STARTED: "; its run had not started (charged to the host, not an attempt)",
    LeaseLoss.ATTEMPT: "",
}


def judge_lost_lease(tx: Tx, row: TaskRow) -> LeaseLoss:
    """Whether the lease the task is losing with its host counts against the task (module docstring)."""
    if progressed_during_lease(tx, row):
        return LeaseLoss.PROGRESSED
    if not run_started_during_lease(tx, row):
        return LeaseLoss.NOT_STARTED
    return LeaseLoss.ATTEMPT


def _after_lost_lease(
    tx: Tx,
    row: TaskRow,
    loss: LeaseLoss,
    why: str,
    *,
    event: str,
    data: dict[str, Any],
    reason: str | None = None,
) -> bool:
    """Requeue a task whose lease was lost with its host (``reason`` on its event, ``why`` by
    default), or fail it when its limit is reached (``why`` in the error); True when it failed. The
    event says whether the attempt counted and, for a lease lost before the run started, how many of
    those the task has had."""
    reason = reason or why
    if loss is LeaseLoss.ATTEMPT:
        if row.attempts >= MAX_ATTEMPTS:
            _fail_max_attempts(tx, row, why)
            return True
        requeue(tx, row, reason=reason, event=event, data={**data, "count_attempt": True})
        return False
    if loss is LeaseLoss.NOT_STARTED:
        lost = row.lost_before_start + 1
        if lost >= MAX_LOST_BEFORE_START:
            _fail_lost_before_start(tx, row, lost, why)
            return True
        tx.execute("UPDATE tasks SET lost_before_start = ? WHERE id = ?", (lost, row.id))
        data = {**data, "lost_before_start": lost}
    requeue(
        tx,
        row,
        reason=reason,
        attempt_delta=-1,
        event=event,
        data={**data, "count_attempt": False},
    )
    return False


def suspend_task(tx: Tx, task_id: str, lease_id: str, wait_for: str) -> TaskRow:
    """The run suspended: the task gives up its lease and locks and waits for ``wait_for``.

    Something that already arrived while the run was live (an inbox row since the lease, or a
    resume before a "resume" wait) wakes it at once, so a suspend never misses its wake-up.
    """
    if not wait_for:
        raise InvalidError(
            "wait_for must say what the task waits for, e.g. child:<task id>", field="wait_for"
        )
    row = fenced_task(tx, task_id, lease_id)
    tx.execute(
        "UPDATE tasks SET state = 'waiting', wait_for = ?, lease_id = NULL, lease_nest_id = NULL,"
        " lease_instance_id = NULL, lease_expires_ms = NULL, attempts = MAX(0, attempts - 1), updated_ms = ?"
        " WHERE id = ?",
        (wait_for, tx.now_ms, task_id),
    )
    release_task_locks(tx, task_id)
    task_event(tx, row, "task.waiting", {"wait_for": wait_for})
    row = get_task(tx, task_id)
    if wait_for == RESUME:
        if not _effectively_held(row.held, row.held_until_ms, tx.now_ms):
            requeue(tx, row, reason="resumed", priority=0)
    else:
        arrived = tx.rows(
            _Arrival,
            f"SELECT {columns(_Arrival)} FROM run_inbox WHERE task_id = ? AND consumed_ms IS NULL"
            " AND created_ms >= ?",
            (task_id, row.leased_ms or 0),
        )
        hit = next((a for a in arrived if inbox_matches(wait_for, a.kind, a.ref)), None)
        if hit is not None:
            requeue(tx, row, reason="inbox", priority=0, data={"kind": hit.kind, "ref": hit.ref})
    return get_task(tx, task_id)


class _Arrival(NamedTuple):
    """Something in a task's inbox (``run_inbox``), as a wait matches it."""

    kind: str
    ref: str | None


def _fail_max_attempts(tx: Tx, row: TaskRow, last: str) -> None:
    error = f"task failed after {row.attempts} attempts (max {MAX_ATTEMPTS}); last: {last}"
    finish_task(
        tx,
        row,
        TaskState.FAILED,
        outcome=Outcome.ended(OutcomeStatus.FAILED, "max_attempts", error).stored(),
        error=error,
        data={"reason": "max_attempts"},
    )
    end_run(tx, row.id, RunStatus.FAILED, "max_attempts")


def _fail_lost_before_start(tx: Tx, row: TaskRow, lost: int, last: str) -> None:
    error = (
        f"task failed: its host was lost {lost} times after leasing it and before its run started"
        f" (max {MAX_LOST_BEFORE_START}); the task may be what stops its host; last: {last}"
    )
    tx.execute("UPDATE tasks SET lost_before_start = ? WHERE id = ?", (lost, row.id))
    finish_task(
        tx,
        row,
        TaskState.FAILED,
        outcome=Outcome.ended(OutcomeStatus.FAILED, "max_attempts", error).stored(),
        error=error,
        data={"reason": "max_attempts", "lost_before_start": lost},
    )
    end_run(tx, row.id, RunStatus.FAILED, "max_attempts")


def run_started_during_lease(tx: Tx, row: TaskRow) -> bool:
    """Did the task's run open or resume since its current lease began? Each open and each claim of
    the run writes a new top-level ``agen.run`` span (runner/records.py), so a span started since the
    lease says the run started; a lease without a start time is taken as started."""
    if not row.leased_ms:
        return True
    return bool(
        tx.scalar(
            "SELECT 1 FROM runs r JOIN spans s ON s.run_id = r.id WHERE r.task_id = ?"
            " AND s.name = 'agen.run' AND s.started_ms >= ? LIMIT 1",
            (row.id, row.leased_ms),
        )
    )


def progressed_during_lease(tx: Tx, row: TaskRow) -> bool:
    """Did the task's run checkpoint a model turn or a tool result since its current lease began?"""
    if not row.leased_ms:
        return False
    return bool(
        tx.scalar(
            "SELECT 1 FROM runs r JOIN messages m ON m.run_id = r.id WHERE r.task_id = ?"
            " AND m.role IN ('assistant', 'tool') AND m.created_ms >= ? LIMIT 1",
            (row.id, row.leased_ms),
        )
    )


def _only(deployment_ids: Collection[str] | None) -> tuple[str, list[str]]:
    if deployment_ids is None:
        return "", []
    ids = sorted(deployment_ids)
    return f" AND deployment_id IN ({','.join('?' * len(ids)) or 'NULL'})", ids


@dataclass(frozen=True, slots=True)
class ExpiredLease:
    """What expire_leases did to one task: ``requeued`` or ``failed`` (its attempts ran out)."""

    task_id: str
    deployment_id: str
    action: str
    attempts: int  # counted attempts before this expiry


def expire_leases(
    tx: Tx, now_ms: int, *, deployment_ids: Collection[str] | None = None
) -> list[ExpiredLease]:
    """Requeue tasks whose lease expired; the attempt is counted unless the run made progress during the
    lease (see ``progressed_during_lease``). The 5th counted expiry fails the task and fences its run.
    ``deployment_ids``: only those deployments' tasks (an embedded one-shot's scope)."""
    scope, ids = _only(deployment_ids)
    rows = tx.rows(
        TaskRow,
        "SELECT * FROM tasks WHERE state IN ('leased', 'running') AND lease_expires_ms <= ?"
        + scope
        + _skip_locked(tx),
        [now_ms, *ids],
    )
    out: list[ExpiredLease] = []
    for row in rows:
        where = f"nest {row.lease_nest_id}, instance {row.lease_instance_id or '-'}"
        loss = judge_lost_lease(tx, row)
        deployment_log(
            tx,
            row,
            f"lease {row.lease_id} of task {row.id} expired ({where}); "
            + {
                LeaseLoss.PROGRESSED: "the run made progress, so the attempt is not counted",
                LeaseLoss.NOT_STARTED: "its run had not started: charged to the host, not an attempt"
                f" (lost before start {row.lost_before_start + 1} of {MAX_LOST_BEFORE_START})",
                LeaseLoss.ATTEMPT: f"attempt {row.attempts} of {MAX_ATTEMPTS}",
            }[loss],
            level="warning",
            instance_id=row.lease_instance_id,
        )
        counted = loss is LeaseLoss.ATTEMPT
        failed = _after_lost_lease(
            tx,
            row,
            loss,
            f"lease expired on {where}",
            reason="lease_expired",
            event="task.requeued",
            data={
                "lease_id": row.lease_id,
                "attempts": row.attempts if counted else row.attempts - 1,
            },
        )
        if not failed:
            fence_run(tx, row.id)  # its holder may still be running it, cut off from the Hub
        out.append(
            ExpiredLease(
                row.id, row.deployment_id, "failed" if failed else "requeued", row.attempts
            )
        )
    return out


def _skip_locked(tx: Tx) -> str:
    """A sweep's row lock on Postgres: rows another writer is changing now (a completion, a lease) are
    passed over, and the rest are re-read as committed, so a task finished meanwhile is not swept."""
    return " FOR UPDATE SKIP LOCKED" if tx.row_lock else ""


def expire_overdue(
    tx: Tx, now_ms: int, *, deployment_ids: Collection[str] | None = None
) -> list[str]:
    """Queued tasks past not_after end as expired (reason expired); returns their ids."""
    scope, ids = _only(deployment_ids)
    rows = tx.rows(
        TaskRow,
        "SELECT * FROM tasks WHERE state = 'queued' AND not_after_ms IS NOT NULL AND not_after_ms <= ?"
        + scope
        + _skip_locked(tx),
        [now_ms, *ids],
    )
    for row in rows:
        error = "not started before its not_after deadline"
        finish_task(
            tx,
            row,
            TaskState.EXPIRED,
            outcome=Outcome.ended(OutcomeStatus.FAILED, "expired", error).stored(),
            error=error,
            data={"reason": "expired", "not_after_ms": row.not_after_ms},
        )
    return [r.id for r in rows]


def cancel_task(tx: Tx, task_id: str, *, by: str | None, reason: str | None = None) -> TaskRow:
    """Hard cancel: ends the task and its unfinished run (epoch+1), releases its locks.

    Cancelling an already finished task changes nothing and returns it.
    """
    row = get_task(tx, task_id)
    if row.state in TERMINAL:
        return row
    why = reason or "cancelled"
    finish_task(
        tx,
        row,
        TaskState.CANCELLED,
        outcome=Outcome.ended(OutcomeStatus.CANCELLED, "cancelled", why).stored(),
        error=None,
        data={"by": by, "reason": why},
    )
    end_run(tx, task_id, RunStatus.CANCELLED, why)
    return get_task(tx, task_id)
