"""call_agent's synchronous A2A path (seed 000 §6): send one message to an A2A agent at a fixed
URL with the official A2A SDK (``a2a-sdk``) and wait for its answer.

The SDK fetches the agent card (``<url>/.well-known/agent-card.json``), picks the transport the
card offers, and speaks A2A 1.0 or 0.3 as the card says. The message goes out with
``return_immediately`` so the remote task's id is known at once; then the task is polled until
it reaches a final state (or asks for input). Any other end of the call cancels the remote task
too: the run cancelled at any point (while the message is on the way included), its time run out,
the ledger's write refused because the Hub fenced the run off (a cancelled task), or an error.
The remote task's id goes into the effect ledger as soon as it is known, so a run resumed after a
crash mid-call polls that task (``tasks/get``) for its answer instead of sending the message again. Every failure (unreachable, an HTTP or JSON-RPC
error, a bad card, a failed task) becomes an :class:`A2AFailure` with a one-line message the
model reads; nothing here crashes a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agen.runner.shielding import finish_even_if_cancelled
from agen.util.backoff import next_backoff

POLL_FIRST_S = 0.05
POLL_MAX_S = 2.0
CANCEL_GRACE_S = 5.0  # how long a cancelled run spends telling the remote agent to stop
HTTP_TIMEOUT_S = 30.0


class A2AFailure(Exception):
    """The call did not produce an answer; ``message`` says why, for the model to read."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class A2AAnswer:
    text: str
    state: str  # the remote task's final state (completed, failed, input_required, ...), or message
    task_id: str | None
    is_error: bool


def _state_name(state: int) -> str:
    from a2a.types.a2a_pb2 import TaskState

    return str(TaskState.Name(state)).removeprefix("TASK_STATE_").lower()


def _parts_text(parts: Any) -> list[str]:
    from google.protobuf.json_format import MessageToDict

    out: list[str] = []
    for p in parts:
        if p.HasField("text"):
            out.append(p.text)
        elif p.HasField("data"):
            out.append(json.dumps(MessageToDict(p.data), indent=2, sort_keys=True))
        elif p.HasField("url"):
            out.append(p.url)
    return out


def _task_text(task: Any) -> str:
    chunks: list[str] = []
    for artifact in task.artifacts:
        chunks += _parts_text(artifact.parts)
    if task.status.HasField("message"):
        status_text = _parts_text(task.status.message.parts)
        chunks += [t for t in status_text if t not in chunks]
    return "\n".join(c for c in chunks if c)


FINAL = {"completed", "failed", "canceled", "rejected", "input_required", "auth_required"}
ERROR_STATES = {"failed", "canceled", "rejected", "auth_required"}


def _answer(task: Any) -> A2AAnswer:
    state = _state_name(task.status.state)
    text = _task_text(task)
    if state == "completed":
        return A2AAnswer(text or "(the agent completed with no text)", state, task.id, False)
    head = f"[{state}] " if state != "input_required" else "[needs_input] "
    return A2AAnswer(
        head + (text or f"the remote task ended {state}"), state, task.id, state in ERROR_STATES
    )


async def call_a2a(
    url: str,
    text: str,
    *,
    message_id: str,
    metadata: dict[str, Any],
    bearer: str | None,
    wait_s: float,
    resume_task_id: str | None = None,
    on_task: Callable[[str], Awaitable[None]] | None = None,
) -> A2AAnswer:
    """Send ``text`` to the A2A agent at ``url`` and wait up to ``wait_s`` for its final answer.

    ``message_id`` is ``<run>.<step>.<call>``, so an agent that dedupes message ids (an agen
    Gateway) treats a repeat as the same task. Cancelling the awaiting task cancels the remote one.
    ``on_task`` is told the remote task's id as soon as it is known (the effect ledger keeps it);
    ``resume_task_id``: a resumed run's call whose message already went out, so nothing is sent
    and that task is polled for its answer.
    """
    from agen import extras

    if not extras.installed("a2a"):
        raise A2AFailure(extras.missing("a2a", "calling an A2A agent"))
    import httpx  # here, not at import: a one-shot run that makes no A2A call loads no HTTP stack
    from a2a.client import A2AClientError, ClientConfig, ClientFactory
    from a2a.client.errors import AgentCardResolutionError
    from a2a.types.a2a_pb2 import (
        CancelTaskRequest,
        GetTaskRequest,
        Message,
        Part,
        Role,
        SendMessageConfiguration,
        SendMessageRequest,
    )
    from a2a.utils.errors import A2AError
    from google.protobuf.struct_pb2 import Struct

    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    deadline = time.monotonic() + wait_s
    async with httpx.AsyncClient(
        headers=headers, timeout=httpx.Timeout(HTTP_TIMEOUT_S), follow_redirects=False
    ) as http:
        factory = ClientFactory(ClientConfig(httpx_client=http, streaming=False, polling=True))
        card_url = f"{url.rstrip('/')}/.well-known/agent-card.json"
        try:
            client = await factory.create_from_url(url)
        except AgentCardResolutionError as e:
            why = f"HTTP {e.status_code}" if e.status_code else _line(e)
            raise A2AFailure(
                f"could not read the agent card at {card_url} ({why}); check the delegate's url"
            ) from None
        except (A2AError, httpx.HTTPError) as e:
            raise A2AFailure(f"could not reach {card_url}: {_line(e)}") from None
        except (ValueError, TypeError) as e:
            raise A2AFailure(f"the agent card at {card_url} is not usable: {_line(e)}") from None
        meta = Struct()
        meta.update(metadata)
        request = SendMessageRequest(
            message=Message(
                message_id=message_id,
                role=Role.ROLE_USER,
                parts=[Part(text=text)],
                metadata=meta,
            ),
            configuration=SendMessageConfiguration(return_immediately=True),
            metadata=meta,
        )
        # The remote task's id once it is known, until the call has its answer: every other way out
        # of the call (a cancel at any point, the run's time running out, the ledger refusing the
        # write because the Hub fenced this run off, any error) asks the remote agent to stop it.
        task_id: str | None = resume_task_id
        sending = asyncio.ensure_future(
            _first_event(client, request)
            if resume_task_id is None
            else _task_event(client, resume_task_id)
        )
        try:
            try:
                first = await _answer_to_send(sending)
                if first is None:
                    raise A2AFailure(f"{url} answered message/send with nothing")
                if first.HasField("message"):
                    answer = "\n".join(_parts_text(first.message.parts))
                    return A2AAnswer(answer, "message", None, False)
                task = first.task
                task_id = task.id
                if on_task is not None:
                    await on_task(task_id)
                pause = POLL_FIRST_S
                while _state_name(task.status.state) not in FINAL:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise A2AFailure(
                            f"{url} did not finish task {task_id} within {wait_s:.0f}s "
                            "(the run's maxRunDuration); it was asked to cancel"
                        )
                    await asyncio.sleep(min(pause, left))
                    pause = next_backoff(pause, POLL_FIRST_S, POLL_MAX_S)
                    task = await client.get_task(GetTaskRequest(id=task_id))
                return _answer(task)  # done, or waiting for input: the remote task is left as it is
            except BaseException:
                if task_id is None:  # cancelled while sending: did the send answer meanwhile?
                    task_id = _sent_task_id(sending)
                if task_id is not None:
                    await finish_even_if_cancelled(
                        _cancel_remote(client, CancelTaskRequest(id=task_id))
                    )
                raise
        except A2AClientError as e:
            raise A2AFailure(f"the call to {url} failed: {_line(e)}") from None
        except A2AError as e:
            raise A2AFailure(f"{url} refused the call: {type(e).__name__}: {_line(e)}") from None
        finally:
            await client.close()


def _line(e: BaseException) -> str:
    """An error's first line (the SDK appends httpx's multi-line hints), without a final period."""
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__).rstrip(".")


async def _first_event(client: Any, request: Any) -> Any:
    """message/send's answer (non-streaming: one event, the task or a message), or None."""
    async for event in client.send_message(request):
        return event
    return None


async def _task_event(client: Any, task_id: str) -> Any:
    """A resumed call's remote task as message/send would have answered it (tasks/get)."""
    from a2a.types.a2a_pb2 import GetTaskRequest, StreamResponse

    return StreamResponse(task=await client.get_task(GetTaskRequest(id=task_id)))


async def _answer_to_send(sending: asyncio.Future[Any]) -> Any:
    """message/send's answer. Cancelled while it is on the way, the send is still given
    CANCEL_GRACE_S to answer, so the caller learns the remote task's id and can cancel it too
    (A2A has no way to cancel a task by its message id)."""
    try:
        return await asyncio.shield(sending)
    except asyncio.CancelledError:
        await finish_even_if_cancelled(asyncio.wait({sending}, timeout=CANCEL_GRACE_S))
        sending.cancel()  # no answer within the grace: the request is dropped
        raise


def _sent_task_id(sending: asyncio.Future[Any]) -> str | None:
    """The remote task's id from a send that answered with a task, else None."""
    if not sending.done() or sending.cancelled() or sending.exception() is not None:
        return None
    answered = sending.result()
    return str(answered.task.id) if answered is not None and answered.HasField("task") else None


async def _cancel_remote(client: Any, request: Any) -> None:
    """Best effort: a remote agent that cannot cancel (or is gone) does not fail the caller."""
    with contextlib.suppress(Exception):  # anything: the caller is ending this call either way
        await asyncio.wait_for(client.cancel_task(request), CANCEL_GRACE_S)
