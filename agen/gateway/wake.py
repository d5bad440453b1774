"""Wake on call (seed 000 §5 "Wake on call"): a call waits for a free instance, or gets 503.

The call's task is the wake-up: a queued task is load, so the autoscaler raises a sleeping
deployment to one instance; while the task runs it stays load, so the deployment is not scaled to
zero under the call. The Gateway waits up to ``wake_timeout_s`` (10 min) for the task to start;
then it cancels the task and answers 503 with a Retry-After hint. Time comes from an injected clock.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from starlette.exceptions import HTTPException

from agen.api import registry as r
from agen.client import Client
from agen.errors import NotFoundError
from agen.wire.deployments import GetDeploymentRequest
from agen.wire.tasks import CancelTaskRequest, GetTaskRequest
from agen.wire.tasks import Task as AgenTask

WAKE_TIMEOUT_S = 600.0
RETRY_AFTER_S = 30
PAUSED_RETRY_AFTER_S = 60


@dataclass(frozen=True)
class WakePolicy:
    wake_timeout_s: float = WAKE_TIMEOUT_S
    poll_s: float = 0.5  # how long one GetTask long-poll waits before the clock is read again
    clock: Callable[[], float] = time.monotonic


class WaitingCalls:
    """How many calls wait for a free instance now, by (namespace, deployment).

    The Nest's Manager reads it each heartbeat: callers waiting while every ready instance of their
    deployment in that Nest is full is saturation, which it reports to the Hub so the autoscaler
    adds an instance (seed 000 §5) even where the queue alone would not ask for one.
    """

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()

    @contextmanager
    def waiting(self, namespace: str, deployment: str) -> Iterator[None]:
        key = (namespace, deployment)
        self._counts[key] += 1
        try:
            yield
        finally:
            self._counts[key] -= 1
            if self._counts[key] <= 0:
                del self._counts[key]

    def snapshot(self) -> dict[tuple[str, str], int]:
        return dict(self._counts)


def unavailable(message: str, retry_after_s: int) -> HTTPException:
    """A 503 with Retry-After: a2a-sdk's dispatcher lets starlette answer it as is."""
    return HTTPException(503, detail=message, headers={"Retry-After": str(retry_after_s)})


async def refuse_if_paused(client: Client, namespace: str, deployment: str) -> None:
    try:
        dep = (
            await client.call(
                r.GetDeployment, GetDeploymentRequest(namespace=namespace, name=deployment)
            )
        ).deployment
    except NotFoundError:
        raise HTTPException(404, detail=f"no deployment {namespace}/{deployment}") from None
    if dep is not None and dep.paused:
        why = f" ({dep.pause_reason})" if dep.pause_reason else ""
        raise unavailable(
            f"{namespace}/{deployment} is paused{why}; calls are refused until `agen start {deployment}`",
            PAUSED_RETRY_AFTER_S,
        )


async def wait_started(client: Client, task: AgenTask, policy: WakePolicy) -> AgenTask:
    """The task once an instance has it (or it ended); cancelled and 503 after the wake timeout."""
    deadline = policy.clock() + policy.wake_timeout_s
    while task.state == "queued":
        if policy.clock() >= deadline:
            await client.call(
                r.CancelTask,
                CancelTaskRequest(
                    id=task.id,
                    reason=f"no instance within the wake timeout ({policy.wake_timeout_s:g} s)",
                ),
            )
            raise unavailable(
                f"{task.namespace}/{task.deployment} had no free instance within "
                f"{policy.wake_timeout_s:g} s; retry in {RETRY_AFTER_S} s",
                RETRY_AFTER_S,
            )
        task = (
            await client.call(r.GetTask, GetTaskRequest(id=task.id, wait_seconds=policy.poll_s))
        ).task
    return task
