"""The A2A methods on agen tasks: a2a-sdk's RequestHandler, one agen task per A2A task.

a2a-sdk's DefaultRequestHandler keeps A2A tasks in its own TaskStore (memory or its own SQL
tables) and runs an AgentExecutor beside it; here the agen task *is* the A2A task (same id), so
tasks/get and tasks/cancel read and act on the Hub's durable record, survive a Gateway restart,
and a repeated message id finds the same task through the Hub's idempotency key.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    A2AError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from agen.api import registry as r
from agen.client import Client
from agen.domain.live import merge
from agen.errors import AgenError, BudgetError, InvalidError, NotFoundError, internal_error
from agen.gateway import convert
from agen.gateway.auth import Caller, HubLink
from agen.gateway.wake import (
    RETRY_AFTER_S,
    WaitingCalls,
    WakePolicy,
    refuse_if_paused,
    unavailable,
    wait_started,
)
from agen.otel.ids import header_traceparent
from agen.wire import tasks as wt

log = logging.getLogger("agen.gateway")
RUN_TIMEOUT_S = 3600.0  # seed 000 §10: a Gateway gives an instance at most 1 h to answer
CALL_STATE = "agen.call"


@dataclass(frozen=True)
class Call:
    """Who calls which deployment: put on the call context by the Gateway's route.

    ``refusals`` carries a refusal with its own HTTP status (403, 404, 429, 503 and Retry-After:
    paused, no instance in time) back to the route, which answers with it and the request's id:
    a2a-sdk would turn it into a JSON-RPC error on HTTP 200, and a caller should see the status and
    the hint.
    """

    caller: Caller
    namespace: str
    deployment: str
    refusals: list[HTTPException] = field(default_factory=list)


def _refuse(call: Call, e: HTTPException) -> A2AError:
    """Hand the refusal to the route; a2a-sdk gets an A2A error it answers without a traceback (the
    route replaces that answer with the refusal, so the SDK's is never seen, except mid-stream)."""
    call.refusals.append(e)
    return InvalidRequestError(message=str(e.detail))


@contextmanager
def _answering(call: Call, method: str) -> Iterator[None]:
    """What a handler method raises, as the caller should see it: an agen error as its A2A error
    or refusal, anything unplanned as "internal error <id>" (the log has the id and traceback)."""
    try:
        yield
    except A2AError:
        raise
    except HTTPException as e:
        raise _refuse(call, e) from None
    except AgenError as e:
        if e.http_status == 500:  # the Hub failed (its store, a bug): its text stays in the log
            raise InternalError(message=internal_error(log, f"A2A {method}").message) from None
        mapped = _a2a_error(e)
        raise (_refuse(call, mapped) if isinstance(mapped, HTTPException) else mapped) from None
    except Exception:
        where = f"A2A {method} on {call.namespace}/{call.deployment}"
        raise InternalError(message=internal_error(log, where).message) from None


def _call(context: ServerCallContext) -> Call:
    call = context.state.get(CALL_STATE)
    assert isinstance(call, Call), "the Gateway route sets the call before dispatching"
    return call


def _ended(task: wt.Task) -> bool:
    return task.state in wt.TERMINAL_STATES or bool(task.pending_approvals)


class AgenRequestHandler(RequestHandler):
    """message/send, message/stream, tasks/get and tasks/cancel as agen tasks of one deployment."""

    def __init__(
        self,
        link: HubLink,
        wake: WakePolicy,
        *,
        run_timeout_s: float = RUN_TIMEOUT_S,
        waiting: WaitingCalls | None = None,
    ):
        self.link = link
        self.wake = wake
        self.run_timeout_s = run_timeout_s
        self.waiting = waiting or WaitingCalls()

    # --- sending ---

    async def _submit(
        self, client: Client, call: Call, params: SendMessageRequest, traceparent: str | None
    ) -> tuple[wt.Task, str]:
        """``traceparent``: the request's W3C header; the message's metadata, when it has one, wins."""
        if params.message.task_id:
            raise InvalidParamsError(
                message="not supported yet: continuing an A2A task by taskId; send a new message "
                "with the same contextId to continue the conversation"
            )
        try:
            sub = convert.read_message(
                params.message,
                MessageToDict(params.metadata) if params.HasField("metadata") else {},
            )
        except InvalidError as e:
            raise InvalidParamsError(message=e.message) from None
        await refuse_if_paused(client, call.namespace, call.deployment)
        try:
            request = wt.SubmitTaskRequest(
                namespace=call.namespace,
                deployment=call.deployment,
                input=sub.text,
                attachments=sub.files,
                conversation_key=convert.conversation_key(call.caller.id, sub.context_id),
                idempotency_key=convert.idempotency_key(call.caller.id, sub.message_id),
                labels=sub.labels,
                traceparent=sub.traceparent or traceparent,
                model_tier=sub.model_tier,  # checked by the model: one of low … max
                # lineage only from an agent's call token (the Hub checks the run is the caller's)
                parent_run_id=sub.parent_run_id if call.caller.is_agent else None,
            )
        except ValidationError as e:  # agen.model_tier, agen.labels from metadata
            where = ", ".join(str(err["loc"][0]) for err in e.errors())
            raise InvalidParamsError(
                message=f"A2A metadata not accepted ({where}): {e.errors()[0]['msg']}"
            ) from None
        resp = await client.call(r.SubmitTask, request)
        return resp.task, sub.context_id

    async def _started(self, client: Client, call: Call, task: wt.Task) -> wt.Task:
        with self.waiting.waiting(call.namespace, call.deployment):
            return await wait_started(client, task, self.wake)

    async def _time_out(self, client: Client, task: wt.Task) -> wt.Task:
        """RunTimeout (seed 000 §10): the call fails and its run is told to stop."""
        return (
            await client.call(
                r.CancelTask,
                wt.CancelTaskRequest(
                    id=task.id, reason=f"A2A run timeout ({self.run_timeout_s:g} s)"
                ),
            )
        ).task

    async def _until_ended(self, client: Client, task: wt.Task, poll_s: float) -> wt.Task:
        deadline = self.wake.clock() + self.run_timeout_s
        while not _ended(task):
            if self.wake.clock() >= deadline:
                return await self._time_out(client, task)
            task = (
                await client.call(r.GetTask, wt.GetTaskRequest(id=task.id, wait_seconds=poll_s))
            ).task
        return task

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        call = _call(context)
        with _answering(call, "message/send"):
            async with self.link.client(call.caller.token) as client:
                task, context_id = await self._submit(
                    client, call, params, header_traceparent(context.state.get("headers") or {})
                )
                if not params.configuration.return_immediately:
                    task = await self._started(client, call, task)
                    task = await self._until_ended(client, task, poll_s=60)
            return convert.to_a2a(task, context_id)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        call = _call(context)
        with _answering(call, "message/stream"):
            async with self.link.client(call.caller.token) as client:
                task, context_id = await self._submit(
                    client, call, params, header_traceparent(context.state.get("headers") or {})
                )
                task = await self._started(client, call, task)
                yield convert.to_a2a(task, context_id)
                latest = [task]
                live = _live(client, call.namespace, task.id, context_id)
                changes: AsyncIterator[wt.Task | TaskArtifactUpdateEvent] = self._changes(
                    client, latest
                )
                async for item in merge(changes, live):
                    if isinstance(item, TaskArtifactUpdateEvent):
                        yield item
                    else:
                        yield self._progress(item, context_id)
                task = latest[0]
                if not _ended(task):  # the run timeout passed: the call ends, and so does its run
                    task = await self._time_out(client, task)
            artifact = convert.answer_artifact(task)
            if artifact is not None:
                yield TaskArtifactUpdateEvent(
                    task_id=task.id, context_id=context_id, artifact=artifact, last_chunk=True
                )
            yield TaskStatusUpdateEvent(
                task_id=task.id, context_id=context_id, status=convert.status_of(task, context_id)
            )

    async def _changes(self, client: Client, latest: list[wt.Task]) -> AsyncIterator[wt.Task]:
        """The task each time its progress changes, until it ends or the run timeout passes
        (``latest[0]``: the task as last read)."""
        task = latest[0]
        progress = task.progress
        deadline = self.wake.clock() + self.run_timeout_s
        while not _ended(task) and self.wake.clock() < deadline:
            task = (
                await client.call(r.GetTask, wt.GetTaskRequest(id=task.id, wait_seconds=1))
            ).task
            latest[0] = task
            if task.progress != progress and task.progress is not None:
                progress = task.progress
                yield task

    @staticmethod
    def _progress(task: wt.Task, context_id: str) -> TaskStatusUpdateEvent:
        return TaskStatusUpdateEvent(
            task_id=task.id,
            context_id=context_id,
            status=TaskStatus(
                state=TaskState.TASK_STATE_WORKING,
                message=convert.agent_message(
                    task, context_id, str(task.progress), f"progress.{task.updated_ms}"
                ),
            ),
        )

    # --- reading and cancelling: only the caller's own tasks of this deployment ---

    async def _own(self, client: Client, call: Call, task_id: str) -> tuple[wt.Task, str]:
        try:
            task = (
                await client.call(
                    r.GetTask, wt.GetTaskRequest(id=task_id, namespace=call.namespace)
                )
            ).task
        except NotFoundError:
            raise TaskNotFoundError from None
        context_id = convert.context_of(task, call.caller.id)
        if task.deployment != call.deployment or context_id is None:
            raise TaskNotFoundError  # another caller's task is not there for this one
        return task, context_id

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        call = _call(context)
        with _answering(call, "tasks/get"):
            async with self.link.client(call.caller.token) as client:
                task, context_id = await self._own(client, call, params.id)
            return convert.to_a2a(task, context_id)

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        call = _call(context)
        with _answering(call, "tasks/cancel"):
            async with self.link.client(call.caller.token) as client:
                task, context_id = await self._own(client, call, params.id)
                if task.state in wt.TERMINAL_STATES:
                    raise TaskNotCancelableError(
                        message=f"task {task.id} has already ended ({task.state})"
                    )
                task = (
                    await client.call(
                        r.CancelTask, wt.CancelTaskRequest(id=task.id, reason="A2A tasks/cancel")
                    )
                ).task
            return convert.to_a2a(task, context_id)

    # --- not served (the card says so: no push notifications, no extended card) ---

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        raise UnsupportedOperationError(message="not supported yet: tasks/list")

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        raise UnsupportedOperationError(message="not supported yet: tasks/resubscribe")
        yield  # an async generator, as the interface asks

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise UnsupportedOperationError(message="not supported yet: push notifications")

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise UnsupportedOperationError(message="not supported yet: push notifications")

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise UnsupportedOperationError(message="not supported yet: push notifications")

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise UnsupportedOperationError(message="not supported yet: push notifications")

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise UnsupportedOperationError(message="not supported yet: the extended agent card")


async def _live(
    client: Client, namespace: str, task_id: str, context_id: str
) -> AsyncIterator[TaskArtifactUpdateEvent]:
    """The run's answer as it streams: each text delta appended to the task's ``answer`` artifact
    (the one the final artifact-update replaces with the whole answer), a new model call starting
    it again (``append`` false). Best effort: without live events the answer comes at the end."""
    fresh = True
    try:
        async with client.live(namespace, task_id) as events:
            async for event in events:
                data = event.get("data") or {}
                if event.get("type") == "model.started":
                    fresh = True
                elif event.get("type") == "run.delta" and data.get("kind") == "text":
                    yield TaskArtifactUpdateEvent(
                        task_id=task_id,
                        context_id=context_id,
                        artifact=convert.live_artifact(task_id, str(data.get("text") or "")),
                        append=not fresh,
                        last_chunk=False,
                    )
                    fresh = False
    except AgenError as e:
        log.info("task %s: no live answer for message/stream: %s", task_id, e.message)


def _a2a_error(e: AgenError) -> Exception:
    """An agen error as the caller sees it: bad input as JSON-RPC invalid params, a missing task as
    TaskNotFound, anything else (denied, unavailable, rate limits) as its own HTTP status and message,
    with Retry-After when the Hub said when to retry. A deployment whose daily budget is spent is held
    at 0, so a call cannot wake it: 503 with the reset time (seed 000 §5), not admission's 429."""
    if isinstance(e, InvalidError):
        return InvalidParamsError(message=e.message)
    if isinstance(e, NotFoundError):
        return TaskNotFoundError(message=e.message)
    retry = e.details.get("retry_after_s")
    if isinstance(e, BudgetError):
        return unavailable(e.message, int(retry or RETRY_AFTER_S))
    headers = {"Retry-After": str(retry)} if retry else None
    return HTTPException(e.http_status, detail=e.message, headers=headers)
