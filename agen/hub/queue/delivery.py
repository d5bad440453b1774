"""Queue modes (seed 000 §6 "steer/interrupt queue modes", "collect's idempotency-key gap",
"SubmitTask.delivery"): what a new submission to a busy conversation does.

- ``followup`` (the default): it is queued and runs after the conversation's earlier tasks.
- ``collect``: merged into the conversation's queued task (its input appended), so a burst of
  messages becomes one task; with nothing queued it is queued. Idempotent through merge keys.
- ``steer``: handed to the conversation's leased/running task as a "steer" inbox row, which the
  run reads as new input before its next model call; the response is that running task.
- ``interrupt``: the running task is asked to wrap up (a graceful cancel with INTERRUPT_GRACE_MS),
  and the submission is queued as its own task, which starts once the old one ends.

With no conversation key, or nothing running (steer, interrupt) or queued (collect) in the
conversation, every mode queues normally. A transaction function, run inside SubmitTask's.
"""

from __future__ import annotations

from agen.domain import DeploymentKind, DeploymentRow, TaskRow
from agen.hub.queue.holds import write_inbox
from agen.hub.queue.submit import SINGLETON_KEY, NewTask, scoped_conversation_key
from agen.hub.queue.tasks import get_task, task_event
from agen.hub.queue.trees import request_wrap_up
from agen.store import Tx, loads

FOLLOWUP = "followup"
MODES = ("followup", "collect", "steer", "interrupt")
INTERRUPT_GRACE_MS = 20_000
STEER_KIND = "steer"
MERGE_SEPARATOR = "\n\n"


def queue_mode(dep: DeploymentRow, asked: str | None) -> str:
    """The submission's own delivery, else the deployment's conversations.queueMode, else followup."""
    if asked:
        return asked
    policy = loads(dep.policy, {}) or {}
    conv = policy.get("conversations") or {}
    mode = conv.get("queue_mode", conv.get("queueMode"))
    return str(mode) if mode in MODES else FOLLOWUP


def _key(dep: DeploymentRow, t: NewTask) -> str | None:
    if dep.kind == DeploymentKind.SINGLETON:
        return SINGLETON_KEY
    return scoped_conversation_key(t.conversation_key, t.source)


def _merged_before(tx: Tx, t: NewTask) -> TaskRow | None:
    """The task an earlier collect/steer with this idempotency key went into."""
    if not t.idempotency_key:
        return None
    task_id = tx.scalar(
        "SELECT task_id FROM task_merge_keys WHERE namespace = ? AND deployment_id = ? AND idempotency_key = ?",
        (t.namespace, t.deployment_id, t.idempotency_key),
    )
    return None if task_id is None else get_task(tx, str(task_id))


def _remember(tx: Tx, t: NewTask, task_id: str) -> None:
    if t.idempotency_key:
        tx.execute(
            "INSERT INTO task_merge_keys (namespace, deployment_id, idempotency_key, task_id, created_ms)"
            " VALUES (?,?,?,?,?)",
            (t.namespace, t.deployment_id, t.idempotency_key, task_id, tx.now_ms),
        )


def _own_key_task(tx: Tx, t: NewTask) -> bool:
    """A task already carries this idempotency key: the plain submit path returns it."""
    return bool(
        t.idempotency_key
        and tx.scalar(
            "SELECT 1 FROM tasks WHERE namespace = ? AND deployment_id = ? AND idempotency_key = ?",
            (t.namespace, t.deployment_id, t.idempotency_key),
        )
    )


def deliver(tx: Tx, dep: DeploymentRow, t: NewTask, mode: str, *, by: str | None) -> TaskRow | None:
    """Apply ``mode`` to a submission: the task it went into (collect, steer), or None to queue ``t``."""
    if mode == FOLLOWUP:
        return None
    key = _key(dep, t)
    if key is None or _own_key_task(tx, t):
        return None
    earlier = _merged_before(tx, t)
    if earlier is not None:
        return earlier
    if mode == "collect":
        return _collect(tx, t, key)
    running = tx.row(
        TaskRow,
        "SELECT * FROM tasks WHERE deployment_id = ? AND conversation_key = ?"
        " AND state IN ('leased', 'running') ORDER BY seq LIMIT 1",
        (t.deployment_id, key),
    )
    if running is None:
        return None
    if mode == "steer":
        write_inbox(
            tx, running.id, STEER_KIND, None, {"input": t.input, "source": t.source, "by": by}
        )
        task_event(tx, running, "task.steered", {"source": t.source, "by": by})
        _remember(tx, t, running.id)
        return get_task(tx, running.id)
    request_wrap_up(
        tx,
        running.id,
        grace_ms=INTERRUPT_GRACE_MS,
        by=by,
        reason="interrupted by a new submission to its conversation",
        interrupt=True,
    )
    return None


def _collect(tx: Tx, t: NewTask, key: str) -> TaskRow | None:
    queued = tx.row(
        TaskRow,
        "SELECT * FROM tasks WHERE deployment_id = ? AND conversation_key = ? AND state = 'queued'"
        " ORDER BY seq DESC LIMIT 1",
        (t.deployment_id, key),
    )
    if queued is None:
        return None
    tx.execute(
        "UPDATE tasks SET input = ?, updated_ms = ? WHERE id = ?",
        (queued.input + MERGE_SEPARATOR + t.input, tx.now_ms, queued.id),
    )
    task_event(
        tx, queued, "task.merged", {"source": t.source, "idempotency_key": t.idempotency_key}
    )
    _remember(tx, t, queued.id)
    return get_task(tx, queued.id)
