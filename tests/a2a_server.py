"""A real A2A agent built with the official SDK's server classes (a2a-sdk), served by uvicorn on a
loopback port in a thread: what call_agent's A2A path talks to in tests.

What it answers depends on the message text: ``fail`` ends the task failed, ``hang`` keeps it
working until it is cancelled, ``wait`` until the test sets ``release``, anything else completes with
``remote says: <text>``. It records every request's text, message and task ids, metadata and
Authorization header, and every cancelled task id. Under
``/broken`` it serves a card without any interface, under ``/failing`` a 502 instead of a card,
under ``/gone`` a card whose JSON-RPC endpoint answers 404. Under ``/held`` it is the same agent, but
its answers to JSON-RPC calls are held until the test sets ``answer``: a task is created while its
caller does not know its id yet.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass
class Seen:
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    hanging: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)  # ends a ``wait`` task
    answer: threading.Event = field(default_factory=threading.Event)  # lets ``/held`` answer


class Remote(AgentExecutor):
    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        text = context.get_user_input()
        self.seen.requests.append(
            {
                "text": text,
                "message_id": context.message.message_id,
                "task_id": context.task_id,
                "metadata": MessageToDict(context.message.metadata),
            }
        )
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        if text == "fail":
            await updater.failed(new_text_message("the remote agent broke"))
            return
        if text == "hang":
            self.seen.hanging.set()
            await asyncio.Event().wait()  # until tasks/cancel cancels this coroutine
        if text == "wait":
            self.seen.hanging.set()
            await asyncio.to_thread(self.seen.release.wait, 60)  # until the test releases it
        await updater.add_artifact([new_text_part(f"remote says: {text}")])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        self.seen.cancelled.append(context.task_id)
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class _RecordAuth:
    def __init__(self, app: ASGIApp, seen: Seen) -> None:
        self.app, self.seen = app, seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            auth = headers.get(b"authorization")
            self.seen.auth.append(auth.decode() if auth else None)
        await self.app(scope, receive, send)


class _HoldAnswers:
    """Under ``/held``: a JSON-RPC call is handled at once, but its answer waits for ``seen.answer``."""

    def __init__(self, app: ASGIApp, seen: Seen) -> None:
        self.app, self.seen = app, seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/held/rpc":
            await self.app(scope, receive, send)
            return

        async def held(message: Message) -> None:
            if message["type"] == "http.response.start":
                await asyncio.to_thread(self.seen.answer.wait, 60)
            await send(message)

        await self.app(scope, receive, held)


def _app(seen: Seen, base: str) -> Starlette:
    card = AgentCard(
        name="remote",
        description="An A2A agent built with a2a-sdk, for tests",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base}/rpc", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="says it back", tags=["test"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Remote(seen), task_store=InMemoryTaskStore(), agent_card=card
    )

    async def broken_card(request: Request) -> Response:  # a card no A2A client can use
        return JSONResponse({"name": "broken", "skills": []})

    async def failing_card(request: Request) -> Response:
        return PlainTextResponse("upstream exploded", status_code=502)

    gone = AgentCard()
    gone.CopyFrom(card)
    gone.supported_interfaces[0].url = f"{base}/gone"  # its JSON-RPC endpoint answers 404
    held = AgentCard()
    held.CopyFrom(card)
    held.supported_interfaces[0].url = f"{base}/held/rpc"
    routes = [
        *create_agent_card_routes(card),
        *create_agent_card_routes(gone, card_url="/gone/.well-known/agent-card.json"),
        *create_agent_card_routes(held, card_url="/held/.well-known/agent-card.json"),
        *create_jsonrpc_routes(handler, "/rpc"),
        *create_jsonrpc_routes(handler, "/held/rpc"),
        Route("/broken/.well-known/agent-card.json", broken_card),
        Route("/failing/.well-known/agent-card.json", failing_card),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(_RecordAuth, seen=seen), Middleware(_HoldAnswers, seen=seen)],
    )


@contextmanager
def a2a_server() -> Iterator[tuple[str, Seen]]:
    """(base URL, what it saw) of a running A2A agent on 127.0.0.1, stopped on exit."""
    from agen.util.listen import tcp_listener

    sock = tcp_listener("127.0.0.1", 0)
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    seen = Seen()
    config = uvicorn.Config(_app(seen, base), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(2000):
            if server.started:
                break
            threading.Event().wait(0.01)
        assert server.started, "the A2A test server did not start"
        yield base, seen
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
