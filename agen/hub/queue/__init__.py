"""The durable task queue (seed 000 §5 "Tasks"), one module per concept.

``submit`` (submit, counts, why a task waits), ``lease`` (leasing and ending tasks: the one terminal
path), ``holds`` (holds and the run inbox), ``locks``, ``trees`` (a task's end for its children,
cancel and hold over a tree), ``delivery`` (queue modes), ``delegation`` (child tasks), ``admission``,
``budgets``, ``providers`` (provider holds), ``nest_leasing`` (LeaseTasks and CompleteTask as a Nest
calls them), ``progress`` (ReportProgress), ``redaction``, ``task_kind``, and ``tasks`` (reading a task,
fencing, events: what the others share). Every function is a transaction function ``fn(tx, ...)``.

The calls most callers need are re-exported here, so a caller imports the queue from one place; a
module of this package imports the module that defines a name, never the package.
"""

from agen.hub.queue.holds import (
    hold_deployment,
    is_held,
    pause_task,
    resume_deployment_hold,
    resume_task,
    wake_expired_holds,
    write_inbox,
)
from agen.hub.queue.lease import (
    MAX_ATTEMPTS,
    MAX_LOST_BEFORE_START,
    cancel_task,
    complete_task,
    expire_leases,
    expire_overdue,
    extend_lease,
    extend_leases,
    lease_tasks,
    mark_running,
    release_task,
    suspend_task,
)
from agen.hub.queue.locks import acquire_lock, release_lock
from agen.hub.queue.submit import (
    PRIORITIES,
    SINGLETON_KEY,
    NewTask,
    QueueCounts,
    loads_labels,
    queue_counts,
    read_queue_counts,
    submit_task,
    wait_reason,
)
from agen.hub.queue.tasks import get_task

__all__ = [
    "MAX_ATTEMPTS",
    "MAX_LOST_BEFORE_START",
    "PRIORITIES",
    "SINGLETON_KEY",
    "NewTask",
    "QueueCounts",
    "acquire_lock",
    "cancel_task",
    "complete_task",
    "expire_leases",
    "expire_overdue",
    "extend_lease",
    "extend_leases",
    "get_task",
    "hold_deployment",
    "is_held",
    "lease_tasks",
    "loads_labels",
    "mark_running",
    "pause_task",
    "queue_counts",
    "read_queue_counts",
    "release_lock",
    "release_task",
    "resume_deployment_hold",
    "resume_task",
    "submit_task",
    "suspend_task",
    "wait_reason",
    "wake_expired_holds",
    "write_inbox",
]
