"""What every scripted model-API stub shares (the OpenAI one here, the Anthropic and Gemini ones in
tests/): a Starlette app served on a free loopback port from its own thread, a queue of scripted
replies, start/stop as sync and async context managers, the answer streamed as server-sent events,
and the bytes an attached image or PDF must start with. Each stub keeps only its API: its request
checks, its reply shapes, its routes."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, ClassVar, Generic, Self, TypeVar

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import BaseRoute

from agen.testing.server import Served, ThreadServer

R = TypeVar("R")

MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
    "application/pdf": (b"%PDF-",),
}
"""The bytes a file of each binary media type starts with: a stub checks that what a request says
is an image or a PDF is one."""


def is_media(kind: str, data: bytes) -> bool:
    """``data`` starts as a file of ``kind`` does (False for a kind MAGIC does not know)."""
    return data.startswith(MAGIC.get(kind, (b"\0never",)))


def words(text: str) -> list[str]:
    """``text`` in the pieces a stub streams it in: word by word, each with its spaces."""
    return re.findall(r"\s*\S+\s*", text) or [text]


def first_text(chunks: list[dict[str, Any]]) -> int:
    """The index of the first chunk or event that carries answer text (OpenAI's or Anthropic's)."""
    for i, c in enumerate(chunks):
        delta = (c.get("choices") or [{}])[0].get("delta") if "choices" in c else c.get("delta")
        if isinstance(delta, dict) and (delta.get("content") or delta.get("text")):
            return i
    return 0


def sse_answer(
    chunks: list[dict[str, Any]],
    hold: threading.Event | None,
    cut: bool,
    last: str | None = "[DONE]",
    sent: list[float] | None = None,
) -> Response:
    """Each chunk as one server-sent event (JSON data; named by its ``type`` when it has one, as
    Anthropic's are); ``hold`` keeps back all after the first text, ``cut`` stops after it;
    ``last`` is a final data line (OpenAI's ``[DONE]``); ``sent`` gets the time.perf_counter() at
    which the first text is handed to the server (benchmarks: first token sent → shown)."""
    at = first_text(chunks)

    async def events() -> AsyncIterator[ServerSentEvent]:
        for i, c in enumerate(chunks):
            name = c.get("type") if "choices" not in c else None
            if i == at and sent is not None:
                sent.append(time.perf_counter())
            yield ServerSentEvent(data=json.dumps(c), event=name)
            if i == at and cut:
                return
            if i == at and hold is not None:
                await asyncio.to_thread(hold.wait)
        if last is not None:
            yield ServerSentEvent(data=last)

    return EventSourceResponse(events(), ping=None, sep="\n")


class ScriptedServer(Served, Generic[R]):
    """A stub's scaffolding: its requests' bodies and headers as received, the problems found in
    them, scripted replies taken in order (``default`` when none is left), and the server's
    lifetime. A subclass is a dataclass whose fields (``default`` first) are what a test sets; it
    names its routes and its thread."""

    default: R  # the reply when none is queued: the subclass's dataclass field
    thread_name: ClassVar[str] = "agen-test-http-server"
    server_config: ClassVar[dict[str, Any]] = {}  # extra uvicorn settings (ThreadServer's)

    def __post_init__(self) -> None:
        self.requests: list[dict[str, Any]] = []  # each request's body, as received
        self.headers: list[dict[str, str]] = []
        self.invalid: list[str] = []  # every problem of every request
        self._queue: deque[R] = deque()
        self._lock = threading.RLock()
        self._http: ThreadServer | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The base URL a provider is given (the SDK's, for this API)."""
        return self.url

    def script(self, *replies: R) -> None:
        with self._lock:
            self._queue.extend(replies)

    def takes(self, reply: R, model: str) -> bool:
        """Whether a queued reply may answer a request for ``model`` (every one, unless the stub's
        replies can be meant for one model)."""
        return True

    def next_reply(self, model: str = "") -> R:
        """The first queued reply that ``takes`` the request, else the default."""
        with self._lock:
            for i, reply in enumerate(self._queue):
                if self.takes(reply, model):
                    del self._queue[i]
                    return reply
        return self.default

    def routes(self) -> list[BaseRoute]:
        raise NotImplementedError

    def start(self) -> Self:
        app = Starlette(routes=self.routes())
        self._http = ThreadServer(app, name=self.thread_name, **self.server_config).start()
        self.port = self._http.port
        return self

    def stop(self) -> None:
        if self._http is not None:
            self._http.stop()
