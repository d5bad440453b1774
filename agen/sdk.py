"""The embedded SDK: run the engine inside your own Python program, no Hub (seed 000 §7a).

    agent = Agent.from_bundle("bundles/hello")
    result = await agent.run("hi")          # RunResult with .outcome
    async for event in agent.stream("hi"):  # live: run.delta (the answer as it streams),
        ...                                  # model.* / tool.* started and finished; recorded:
                                             # assistant / tool_result; last: finished
    await agent.close()

Or build one in code: ``Agent(instructions="...", provider="fake", tools=[my_function])``.
Host tools are plain functions (JSON schema from their type hints); an ``approve`` callback
decides "ask" permissions. Every run is recorded in the Store like a managed run.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import Any

from agen.bundle import Bundle, load_bundle, load_bundle_files
from agen.errors import ReentrantError, UnavailableError
from agen.runner.loop import Runner
from agen.runner.policy import (
    AllowAll,
    ApprovalDecision,
    ApprovalGate,
    ApprovalRequest,
    DenyAsks,
    ToolPolicy,
)
from agen.runner.redact import Redactor
from agen.runner.tools.base import Tool, Toolset
from agen.runner.types import RunRequest, RunResult
from agen.sdk_tools import Dispatcher, FunctionTool, host_tool
from agen.store import new_ulid
from agen.store.base import Store

__all__ = ["Agent", "RunResult", "host_tool"]

Approve = Callable[[ApprovalRequest], Any]
Attach = str | os.PathLike[str] | tuple[str, bytes]
"""A file given with a run's input: a path, or (name, bytes)."""
OnEvent = Callable[[dict[str, Any]], Any]


def _read_files(attach: Sequence[Attach]) -> list[tuple[str, bytes, str | None]]:
    """(name, bytes, None) of each file given; InvalidError for one that cannot be read."""
    from pathlib import Path

    from agen.errors import InvalidError

    out: list[tuple[str, bytes, str | None]] = []
    for item in attach:
        if isinstance(item, tuple):
            name, data = item
            out.append((str(name), bytes(data), None))
            continue
        path = Path(item)
        try:
            out.append((path.name, path.read_bytes(), None))
        except OSError as e:
            raise InvalidError(
                f"attach: cannot read {path} ({e.strerror or e}); give a file you can read",
                field="attach",
            ) from None
    return out


class _HostTools(Toolset):
    def __init__(self, tools: list[Tool]) -> None:
        self.tools = tools

    async def start(self) -> list[Tool]:
        return self.tools


class _DispatchedGate(ApprovalGate):
    """Approvals decided by the host app's callback, delivered on the agent's dispatcher."""

    def __init__(self, callback: Approve, dispatcher: Dispatcher) -> None:
        self.callback = callback
        self.dispatcher = dispatcher

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        answer = await self.dispatcher.call(self.callback, request)
        if isinstance(answer, ApprovalDecision):
            return answer
        return ApprovalDecision(bool(answer), decided_by="sdk-callback")


def _bundle_in_code(
    name: str,
    instructions: str,
    provider: str,
    model: str | None,
    harness: dict[str, Any] | None,
    config: dict[str, Any] | None,
) -> Bundle:
    h: dict[str, Any] = {"provider": provider, **(harness or {})}
    if model:
        h["model"] = model
    files = {
        "plugin.json": json.dumps({"name": name}).encode(),
        "x-agen/agent.md": instructions.encode(),
        "x-agen/harness.json": json.dumps(h).encode(),
        "x-agen/config.json": json.dumps(config or {}).encode(),
    }
    return load_bundle_files(files)


class Agent:
    """One agent embedded in this process; runs many concurrent runs."""

    def __init__(
        self,
        *,
        name: str = "agent",
        instructions: str = "You are a helpful assistant.",
        provider: str = "auto",
        model: str | None = None,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        harness: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        bundle: Bundle | None = None,
        store: Store | str | os.PathLike[str] | None = None,
        approve: Approve | None = None,
        on_event: OnEvent | None = None,
        policy: ToolPolicy | None = None,
        toolsets: Sequence[Toolset] = (),
        namespace: str = "default",
        deployment: str | None = None,
    ) -> None:
        self.bundle = bundle or _bundle_in_code(
            name, instructions, provider, model, harness, config
        )
        self.namespace = namespace
        self.deployment = deployment if deployment is not None else self.bundle.name
        self._store_arg = store
        self._store: Store | None = store if isinstance(store, Store) else None
        self._owns_store = not isinstance(store, Store)
        self.dispatcher = Dispatcher(self, self.bundle.name)
        self._host_tools: list[Tool] = [
            t if isinstance(t, Tool) else FunctionTool(t, self.dispatcher) for t in tools
        ]
        self._approve = approve
        self._on_event = on_event
        self._policy = policy
        self._toolsets = list(toolsets)
        self._runner: Runner | None = None
        self._open_lock: asyncio.Lock | None = None
        self._running: dict[int, tuple[asyncio.Task[Any], asyncio.Event]] = {}
        self._closed = False

    @classmethod
    def from_bundle(cls, path: str | os.PathLike[str], **kwargs: Any) -> Agent:
        """An agent defined by a bundle folder (its permission rules apply; asks go to ``approve``)."""
        return cls(bundle=load_bundle(path), **kwargs)

    async def _ensure(self) -> Runner:
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._runner is not None:
                return self._runner
            if self._store is None:
                from agen.store import open_store

                arg = self._store_arg
                self._store = await open_store(str(arg) if arg is not None else None)
            gate = _DispatchedGate(self._approve, self.dispatcher) if self._approve else DenyAsks()
            host = [*self._toolsets, _HostTools(self._host_tools)]
            if self.bundle.root:  # a bundle folder: its MCP servers, rules, workspace and memory
                from agen.runner.tooling import build_tooling

                t = build_tooling(
                    self.bundle, self._store, namespace=self.namespace, deployment=self.deployment
                )
                runner = Runner(
                    self._store,
                    self.bundle,
                    owner=self._owner(),
                    toolsets=[*host, *t.toolsets],
                    policy=self._policy or t.policy,
                    gate=gate,
                    redactor=t.redactor,
                    extras=t.extras,
                )
            else:  # an agent built in code has no permission rules and no MCP servers
                runner = Runner(
                    self._store,
                    self.bundle,
                    owner=self._owner(),
                    toolsets=host,
                    policy=self._policy or AllowAll(),
                    gate=gate,
                    redactor=Redactor(),
                )
            self._runner = runner
            await runner.start()
            return runner

    @staticmethod
    def _owner() -> str:
        return f"sdk:{os.getpid()}:{new_ulid()}"

    def _request(self, text: str, opts: dict[str, Any]) -> RunRequest:
        return RunRequest(
            input=text,
            namespace=opts.pop("namespace", self.namespace),
            deployment=opts.pop("deployment", self.deployment),
            source="sdk",
            **opts,
        )

    async def run(
        self,
        input: str,
        *,
        cancel: asyncio.Event | None = None,
        attach: Sequence[Attach] = (),
        **opts: Any,
    ) -> RunResult:
        """Run once to its outcome. ``attach``: files given with the input (images, PDFs, text; a
        path or (name, bytes)), stored as artifacts and sent to the model in its provider's form.
        ``opts`` are RunRequest fields (task_id, conversation_key, labels...)."""
        return await self._run(input, cancel, None, {**opts, "attach": attach})

    async def _run(
        self, text: str, cancel: asyncio.Event | None, sink: Any, opts: dict[str, Any]
    ) -> RunResult:
        if self.dispatcher.inside():
            raise ReentrantError(
                "run() was called from inside a callback of the same agent; hand the work to "
                "another task or thread and return from the callback first"
            )
        if self._closed:
            raise UnavailableError("the agent is closed; create a new Agent to run more work")
        runner = await self._ensure()
        opts = dict(opts)
        files = _read_files(opts.pop("attach", ()) or ())
        if files:
            from agen.runner.artifacts import save_files

            assert self._store is not None
            space = opts.get("namespace", self.namespace)
            opts["attachments"] = await save_files(self._store, space, files)
        request = self._request(text, opts)
        cancel = cancel or asyncio.Event()
        me = asyncio.current_task()
        assert me is not None
        self._running[id(me)] = (me, cancel)
        try:
            return await runner.run(request, cancel=cancel, events=self._events(sink))
        finally:
            self._running.pop(id(me), None)

    def _events(self, sink: Any) -> Any:
        on_event = self._on_event
        if on_event is None and sink is None:
            return None

        async def deliver(event: dict[str, Any]) -> None:
            if on_event is not None:
                await self.dispatcher.call(on_event, event)
            if sink is not None:
                sink.put_nowait(event)

        return deliver

    async def stream(
        self, input: str, *, attach: Sequence[Attach] = (), **opts: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """The run's events as they happen; the last one is ``{"type": "finished", ...}``.

        ``run.delta`` (``turn``, ``text``, ``kind``: text or thinking) carries the answer as the
        model streams it, ``model.started``/``model.finished`` and ``tool.started``/``tool.finished``
        frame each call (docs/observability.md, "Live events"); ``assistant`` and
        ``tool_result`` are each turn as recorded. A model call asked again (its stream broke off)
        starts with a new ``model.started``: drop what its deltas showed. ``attach`` as for ``run``."""
        opts = {**opts, "attach": attach}
        queue: asyncio.Queue[dict[str, Any] | BaseException] = asyncio.Queue()
        cancel = asyncio.Event()

        async def drive() -> None:
            try:
                await self._run(input, cancel, queue, opts)
            except BaseException as e:
                queue.put_nowait(e)

        task = asyncio.create_task(drive())
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if item.get("type") == "finished":
                    break
            await task
        finally:
            if not task.done():
                cancel.set()
                await asyncio.gather(task, return_exceptions=True)

    async def close(self) -> None:
        """Reject new runs, cancel running ones (they end ``cancelled``), fail pending host requests."""
        if self._closed:
            return
        self._closed = True
        for _task, cancel in list(self._running.values()):
            cancel.set()
        self.dispatcher.close()
        tasks = [t for t, _ in self._running.values() if t is not asyncio.current_task()]
        if tasks:
            await asyncio.wait(tasks, timeout=30)
        if self._runner is not None:
            await self._runner.close()
        if self._store is not None and self._owns_store:
            await self._store.close()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
