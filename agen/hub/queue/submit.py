"""Submitting to the durable task queue (seed 000 §5 "Tasks"): submit, counts, why a task waits.

Every function is a plain transaction function ``fn(tx, ...)`` run with
``await store.write(lambda tx: fn(tx, ...))``. Leasing and ending tasks live in
agen.hub.queue.lease, holds and the inbox in agen.hub.queue.holds; ``agen.hub.queue`` re-exports the
common calls of all three, so callers import the queue from one place.

Events (same transaction as the change): task.queued, task.leased (a lease the Nest
starts later; leased straight into running it is one task.started), task.started,
task.released, task.requeued, task.waiting, task.held, task.resumed, and one event
per terminal state: task.succeeded, task.failed, task.cancelled, task.expired.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from agen.domain import (
    NewTaskRow,
    Outcome,
    OutcomeStatus,
    TaskLineage,
    TaskRow,
    TaskState,
    columns,
)
from agen.errors import InvalidError, NotFoundError, RateLimitedError
from agen.hub.queue.lease import CONVERSATION_FREE_SQL, finish_task
from agen.hub.queue.locks import check_lock_names
from agen.hub.queue.tasks import due_sql, held_sql, task_event
from agen.store import Store, Tx, dumps, loads
from agen.store.base import new_ulid
from agen.store.pg_locks import lock_keys
from agen.store.records import Count

PRIORITIES: dict[str, int] = {"urgent": 0, "high": 1, "normal": 2, "background": 3}
MAX_NOT_BEFORE_MS = 90 * 24 * 3600 * 1000
TRUST_LEVELS = ("operator", "trusted", "untrusted")
# A conversation key already carrying one of these prefixes is taken as is.
SOURCE_PREFIXES = (
    "api:",
    "webhook:",
    "a2a:",
    "reply:",
    "cron:",
    "event:",
    "random:",
    "child:",
    "mcp:",
    "singleton:",
    "async:",  # a conversation named for a detached child's reply (agen.runner.records)
)
# A singleton keeps its one conversation and ignores keys (seed 000 §5 "Tasks"): every task of it carries this key,
# so its runs share one session and run one at a time, in submission order.
SINGLETON_KEY = "singleton:session"
QUEUE_FULL_RETRY_S = 5


@dataclass
class NewTask:
    """What SubmitTask stores; the Hub resolves the deployment and checks scopes first."""

    namespace: str
    deployment_id: str
    deployment: str
    input: str
    source: str = "api"
    conversation_key: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    priority: str | int = "normal"
    idempotency_key: str | None = None
    schedule_key: str | None = None
    not_before_ms: int | None = None
    not_after_ms: int | None = None
    locks: list[str] = field(default_factory=list)
    trust: str = "trusted"
    model_tier: str | None = None
    overrides: dict[str, Any] | None = None
    parent_task_id: str | None = None
    submitted_by: str | None = None
    event_chain: int = 0
    reply_deployment: str | None = None
    reply_conversation_key: str | None = None
    on_parent_end: str = "cancel"
    traceparent: str | None = None  # W3C: the run joins the caller's trace (agen.otel.ids)
    deployment_kind: str | None = (
        None  # the caller read the deployment already: no SELECT for its kind
    )
    attachments: list[dict[str, Any]] | None = None  # Attachment dicts: files stored already


@dataclass
class QueueCounts:
    """One deployment's queue at a glance (autoscaler load, `agen ps`, the TUI)."""

    queued: int = 0  # due now (not_before passed or unset)
    scheduled: int = 0  # queued with not_before in the future
    leased: int = 0
    running: int = 0
    waiting: int = 0
    held: int = 0  # due but held (PauseTask / HoldDeployment)
    urgent_load: int = 0  # urgent/high priority, due or in flight
    oldest_queued_ms: int | None = None

    @property
    def load(self) -> int:
        """Autoscaler load: due queued + leased + running (not scheduled, not waiting)."""
        return self.queued + self.leased + self.running

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "load": self.load}


def priority_value(priority: str | int) -> int:
    """urgent/high/normal/background (or 0..3) -> the stored number."""
    if isinstance(priority, int) and not isinstance(priority, bool) and 0 <= priority <= 3:
        return priority
    if isinstance(priority, str) and priority in PRIORITIES:
        return PRIORITIES[priority]
    raise InvalidError(
        f"priority {priority!r} is not one of {', '.join(PRIORITIES)}", field="priority"
    )


def scoped_conversation_key(key: str | None, source: str) -> str | None:
    """Scope a conversation key by its source ("api:<key>"); a key read back from a task is kept."""
    if not key:
        return None
    if key.startswith(SOURCE_PREFIXES):
        return key
    return f"{source or 'api'}:{key}"


def _conversation_key(tx: Tx, t: NewTask) -> str | None:
    """The stored key: the source-scoped key, or the singleton's one key whatever the caller sent."""
    kind = t.deployment_kind or tx.scalar(
        "SELECT kind FROM deployments WHERE id = ?", (t.deployment_id,)
    )
    if kind == "singleton":
        return SINGLETON_KEY
    return scoped_conversation_key(t.conversation_key, t.source)


def _validate(tx: Tx, t: NewTask) -> int:
    if not t.input and t.input != "":
        raise InvalidError("task input is missing", field="input")
    if t.trust not in TRUST_LEVELS:
        raise InvalidError(
            f"trust {t.trust!r} is not one of {', '.join(TRUST_LEVELS)}", field="trust"
        )
    now = tx.now_ms
    if t.not_before_ms is not None and t.not_before_ms > now + MAX_NOT_BEFORE_MS:
        raise InvalidError(
            "not_before is more than 90 days ahead; schedule it closer (at most 90 days)",
            field="not_before_ms",
        )
    if t.not_after_ms is not None:
        if t.not_after_ms <= now:
            raise InvalidError(
                "not_after is already in the past; give a deadline ahead of now",
                field="not_after_ms",
            )
        if t.not_before_ms is not None and t.not_after_ms <= t.not_before_ms:
            raise InvalidError("not_after must be later than not_before", field="not_after_ms")
    return priority_value(t.priority)


def submit_task(tx: Tx, t: NewTask, *, max_queued: int | None = None) -> tuple[TaskRow, bool]:
    """Store a queued task; (row, created). An idempotency key seen before returns the existing task.

    schedule_key cancels the deployment's queued task with that key in this transaction;
    ``max_queued`` (admission maxQueuedTasks, counting scheduled tasks too) refuses with
    RateLimitedError stage="queue_full".
    """
    # Decisions read from rows this write does not lock (agen.store.pg_locks): whether the key was seen,
    # which queued task a schedule key replaces, how many are queued.
    lock_keys(
        tx,
        *([f"idempotency:{t.deployment_id}:{t.idempotency_key}"] if t.idempotency_key else []),
        *([f"schedule:{t.deployment_id}:{t.schedule_key}"] if t.schedule_key else []),
        *([f"queued:{t.deployment_id}"] if max_queued is not None else []),
    )
    if t.idempotency_key:
        existing = tx.row(
            TaskRow,
            "SELECT * FROM tasks WHERE namespace = ? AND deployment_id = ? AND idempotency_key = ?",
            (t.namespace, t.deployment_id, t.idempotency_key),
        )
        if existing is not None:
            return existing, False
    priority = _validate(tx, t)
    lock_names = check_lock_names(t.locks)
    replaced = None
    if t.schedule_key:
        replaced = tx.row(
            TaskRow,
            "SELECT * FROM tasks WHERE deployment_id = ? AND schedule_key = ? AND state = 'queued'",
            (t.deployment_id, t.schedule_key),
        )
    if max_queued is not None and replaced is None:
        queued = int(
            tx.scalar(
                "SELECT COUNT(*) FROM tasks WHERE deployment_id = ? AND state = 'queued'",
                (t.deployment_id,),
            )
            or 0
        )
        if queued >= max_queued:
            raise RateLimitedError(
                f"deployment {t.namespace}/{t.deployment} already has {queued} queued tasks (maxQueuedTasks "
                f"{max_queued}); retry in {QUEUE_FULL_RETRY_S}s or raise the limit",
                stage="queue_full",
                retry_after_s=QUEUE_FULL_RETRY_S,
                deployment=t.deployment,
                queued=queued,
                limit=max_queued,
            )
    task_id = new_ulid()
    labels = dict(t.labels)
    root_id, depth = task_id, 0
    if t.parent_task_id:
        parent = tx.row(
            TaskLineage,
            f"SELECT {columns(TaskLineage)} FROM tasks WHERE id = ?",
            (t.parent_task_id,),
        )
        if parent is None:
            raise NotFoundError(f"parent task {t.parent_task_id} not found", field="parent_task_id")
        root_id, depth = parent.root_task_id, parent.depth + 1
        labels = {**loads_labels(parent.labels), **labels}
    if replaced is not None:
        finish_task(
            tx,
            replaced,
            TaskState.CANCELLED,
            outcome=Outcome.ended(
                OutcomeStatus.CANCELLED, "replaced", f"replaced by task {task_id}"
            ).stored(),
            error=None,
            data={"reason": "replaced", "by_task": task_id, "schedule_key": t.schedule_key},
        )
    now = tx.now_ms
    row = NewTaskRow(
        id=task_id,
        namespace=t.namespace,
        deployment_id=t.deployment_id,
        deployment=t.deployment,
        state=TaskState.QUEUED,
        input=t.input,
        source=t.source or "api",
        conversation_key=_conversation_key(tx, t),
        labels=dumps(labels),
        priority=priority,
        idempotency_key=t.idempotency_key,
        schedule_key=t.schedule_key,
        not_before_ms=t.not_before_ms,
        not_after_ms=t.not_after_ms,
        trust=t.trust,
        model_tier=t.model_tier,
        overrides=None if t.overrides is None else dumps(t.overrides),
        parent_task_id=t.parent_task_id,
        root_task_id=root_id,
        depth=depth,
        reply_deployment=t.reply_deployment,
        reply_conversation_key=t.reply_conversation_key,
        on_parent_end=t.on_parent_end,
        event_chain=t.event_chain,
        submitted_by=t.submitted_by,
        traceparent=t.traceparent,
        attachments=dumps(t.attachments) if t.attachments else None,
        created_ms=now,
        updated_ms=now,
    )
    # seq (submission order) is assigned in the INSERT; RETURNING gives the stored row without reading it again.
    stored = tx.row(TaskRow, _INSERT_SQL_PG if tx.dialect == "postgres" else _INSERT_SQL, row)
    assert stored is not None
    if lock_names:
        tx.executemany(
            "INSERT INTO task_locks (task_id, name) VALUES (?, ?)",
            [(task_id, n) for n in lock_names],
        )
    task_event(
        tx,
        stored,
        "task.queued",
        {
            "priority": priority,
            "conversation_key": row.conversation_key,
            "not_before_ms": t.not_before_ms,
            "source": row.source,
            "parent_task_id": t.parent_task_id,
            **({"replaced": replaced.id} if replaced is not None else {}),
        },
    )
    return stored, True


_INSERT_SQL = (
    f"INSERT INTO tasks ({columns(NewTaskRow)}, seq) VALUES ({', '.join('?' * len(NewTaskRow._fields))},"
    " (SELECT COALESCE(MAX(seq), 0) + 1 FROM tasks)) RETURNING *"
)
"""The task INSERT: one constant text, so sqlite3 caches its prepared statement. Its one writer makes
MAX(seq) + 1 safe."""
_INSERT_SQL_PG = (
    f"INSERT INTO tasks ({columns(NewTaskRow)}) VALUES ({', '.join('?' * len(NewTaskRow._fields))})"
    " RETURNING *"
)
"""Postgres: writers run side by side, so seq comes from the column's sequence (migration 0025)."""


def loads_labels(text: str | None) -> dict[str, str]:
    value = loads(text, {})
    return dict(value) if isinstance(value, dict) else {}


def wait_reason(
    tx: Tx,
    task: TaskRow,
    *,
    now_ms: int | None = None,
    deployment_paused: bool | None = None,
    budget_held: bool = False,
) -> str | None:
    """Why a queued task is not starting: scheduled, paused, budget, held, conversation, locks or capacity.

    None for a task that is not queued. Each check is one indexed probe; pass
    ``deployment_paused`` when listing many tasks of one deployment.
    """
    if task.state != TaskState.QUEUED:
        return None
    now = tx.now_ms if now_ms is None else now_ms
    if task.not_before_ms is not None and task.not_before_ms > now:
        return "scheduled"
    paused = deployment_paused
    if paused is None:
        paused = bool(
            tx.scalar("SELECT paused FROM deployments WHERE id = ?", (task.deployment_id,))
        )
    if paused:
        return "paused"
    if budget_held:
        return "budget"
    if task.held and (task.held_until_ms is None or task.held_until_ms > now):
        return "held"
    if task.conversation_key and not tx.scalar(
        f"SELECT 1 FROM tasks t WHERE t.id = :id AND {CONVERSATION_FREE_SQL}",
        {"id": task.id, "now": now},
    ):
        return "conversation"
    if tx.scalar(
        "SELECT 1 FROM task_locks tl JOIN locks l ON l.namespace = ? AND l.name = tl.name"
        " WHERE tl.task_id = ? AND l.task_id != tl.task_id AND l.expires_ms > ? LIMIT 1",
        (task.namespace, task.id, now),
    ):
        return "locks"
    return "capacity"


_COUNTS = f"""
    SELECT deployment_id,
      SUM(CASE WHEN state = 'queued' AND {due_sql()} AND NOT {held_sql()} THEN 1 ELSE 0 END) AS queued,
      SUM(CASE WHEN state = 'queued' AND NOT {due_sql()} THEN 1 ELSE 0 END) AS scheduled,
      SUM(CASE WHEN state = 'queued' AND {due_sql()} AND {held_sql()} THEN 1 ELSE 0 END) AS held,
      SUM(CASE WHEN state = 'leased' THEN 1 ELSE 0 END) AS leased,
      SUM(CASE WHEN state = 'running' THEN 1 ELSE 0 END) AS running,
      SUM(CASE WHEN state = 'waiting' THEN 1 ELSE 0 END) AS waiting,
      SUM(CASE WHEN priority <= 1 AND (state IN ('leased', 'running')
               OR (state = 'queued' AND {due_sql()} AND NOT {held_sql()})) THEN 1 ELSE 0 END) AS urgent_load,
      MIN(CASE WHEN state = 'queued' AND {due_sql()} THEN created_ms END) AS oldest_queued_ms
    FROM tasks
    WHERE state IN ('queued', 'leased', 'running', 'waiting')
"""


def queue_counts(
    tx: Tx, *, now_ms: int | None = None, deployment_ids: list[str] | None = None
) -> dict[str, QueueCounts]:
    """Per-deployment counts of unfinished tasks in one aggregate query (deployment_id -> counts)."""
    now = tx.now_ms if now_ms is None else now_ms
    params: dict[str, Any] = {"now": now}
    sql = _COUNTS
    if deployment_ids is not None:
        if not deployment_ids:
            return {}
        names = [f"d{i}" for i in range(len(deployment_ids))]
        sql += f" AND deployment_id IN ({', '.join(':' + n for n in names)})"
        params.update(zip(names, deployment_ids, strict=True))
    return {
        r.deployment_id: _counts_of(r)
        for r in tx.rows(_CountsRow, sql + " GROUP BY deployment_id", params)
    }


class _CountsRow(NamedTuple):
    """One deployment's line of ``_COUNTS`` (a SUM is NULL on no rows and ``numeric`` on Postgres)."""

    deployment_id: str
    queued: Count
    scheduled: Count
    held: Count
    leased: Count
    running: Count
    waiting: Count
    urgent_load: Count
    oldest_queued_ms: int | None


def _counts_of(r: _CountsRow) -> QueueCounts:
    return QueueCounts(
        queued=r.queued,
        scheduled=r.scheduled,
        leased=r.leased,
        running=r.running,
        waiting=r.waiting,
        held=r.held,
        urgent_load=r.urgent_load,
        oldest_queued_ms=r.oldest_queued_ms,
    )


async def read_queue_counts(store: Store, *, now_ms: int) -> dict[str, QueueCounts]:
    """queue_counts on a reader connection: the leader's tick takes them before its write transaction, so
    the writer is not held for the scan (about 90 ms over 100,000 unfinished tasks)."""
    return {
        r.deployment_id: _counts_of(r)
        for r in await store.rows(_CountsRow, _COUNTS + " GROUP BY deployment_id", {"now": now_ms})
    }
