"""``agen host serve``: one instance in a child process of its Nest (the ``process`` backend).

The Manager starts it with the Store URL, the instance id, the definition digest and a
per-instance host token in the environment (never on argv); the deployment's platform secret
values and the bundle (the archive the Manager fetched, checked against the digest) come in the hello
message, over the pipe only the Manager holds. It opens the same Store (for run data only: a host role
can run it, agen.store.host_tables), starts the same RunnerExecutor an ``inproc`` instance
uses (runs write their data straight to the Store) and speaks JSON lines on stdin/stdout:

    Manager -> host: hello{token, platform, bundle} run{task} cancel{id} drain health{seq} close
    host -> Manager: ready | failed{error}, result{id, result}, health{seq, in_flight},
                     progress{task_id, progress}, live{events}

``live`` carries the host's live events (agen.domain.live: deltas, model and tool calls) in
batches (agen.domain.live_batches); the Manager publishes them on its own process's bus.

Only the Manager holds the pipes; the hello must carry the host token, so nothing but the
Manager that started the host can drive it. Stray prints go to stderr, never the channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from typing import IO, TYPE_CHECKING, Any

from agen.errors import ConflictError, InvalidError
from agen.nest.executor import ExecResult, Executor
from agen.nest.port import LeasedTask

if TYPE_CHECKING:  # the host process loads them when it serves, not on import
    from agen.bundle import Bundle
    from agen.domain.live import LiveEvent

ENV_STORE = "AGEN_HOST_STORE"
ENV_INSTANCE = "AGEN_HOST_INSTANCE"
ENV_DIGEST = "AGEN_HOST_DIGEST"
ENV_TOKEN = "AGEN_HOST_TOKEN"
LINE_LIMIT = 64 * 1024 * 1024


class _Channel:
    """The protocol's output: the original stdout, which nothing else writes to any more."""

    def __init__(self) -> None:
        self._out: IO[str] = os.fdopen(os.dup(1), "w", encoding="utf-8")
        os.dup2(2, 1)  # print() and libraries now write to stderr
        sys.stdout = sys.stderr

    async def progress(self, task_id: str, progress: dict[str, Any]) -> None:
        """The report_progress tool's value goes to the Manager, which reports it to the Hub."""
        self.send({"op": "progress", "task_id": task_id, "progress": progress})

    async def live(self, events: list[LiveEvent]) -> list[tuple[int, str]]:
        """A batch of this host's live events, for the Manager's bus."""
        from agen.wire.nests import LiveEventWire

        self.send(
            {"op": "live", "events": [LiveEventWire.of(e).model_dump(mode="json") for e in events]}
        )
        return []

    def send(self, msg: dict[str, Any]) -> None:
        self._out.write(json.dumps(msg, separators=(",", ":"), default=str) + "\n")
        self._out.flush()


async def _stdin_reader() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


def _load_bundle(archive_b64: object, digest: str) -> Bundle:
    """The bundle the Manager sent in the hello (a packed archive, base64), checked against its digest."""
    import base64
    import binascii

    from agen.bundle import load_bundle_files
    from agen.bundle.archive import unpack

    if not isinstance(archive_b64, str):
        raise InvalidError(
            "the hello carries no bundle: the Manager and this host differ in version"
        )
    try:
        blob = base64.b64decode(archive_b64, validate=True)
    except binascii.Error:
        raise InvalidError("the hello's bundle is not base64") from None
    bundle = load_bundle_files(unpack(blob, expect_digest=digest))
    if bundle.digest != digest:
        raise ConflictError(
            f"the bundle sent unpacked to digest {bundle.digest}, expected {digest}", digest=digest
        )
    return bundle


async def serve() -> int:
    """Serve one instance until the Manager closes the channel; the exit code says how it ended."""
    from agen.domain.live_batches import LiveBatcher
    from agen.nest.runner_executor import start_executor
    from agen.store import open_store

    env = os.environ
    missing = [k for k in (ENV_STORE, ENV_INSTANCE, ENV_DIGEST, ENV_TOKEN) if not env.get(k)]
    if missing:
        raise InvalidError(
            f"agen host serve is started by a Nest's Manager; {', '.join(missing)} not set"
        )
    token = env.pop(ENV_TOKEN)
    instance_id, digest = env[ENV_INSTANCE], env[ENV_DIGEST]
    signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # the Nest drains us; Ctrl-C in its terminal is its business
    chan = _Channel()
    reader = await _stdin_reader()
    hello = json.loads(await reader.readline() or b"{}")
    if hello.get("op") != "hello" or hello.get("token") != token:
        chan.send(
            {"op": "failed", "error": "the first message must be hello with this host's token"}
        )
        return 2
    store = await open_store(env[ENV_STORE])
    try:
        try:
            executor = await start_executor(
                store,
                _load_bundle(hello.get("bundle"), digest),
                instance_id,
                progress=chan.progress,
                platform_secrets=dict(hello.get("platform") or {}),
            )
        except Exception as e:
            chan.send({"op": "failed", "error": str(e)})
            return 1
        live = LiveBatcher(chan.live, f"instance {instance_id}: live events to its Nest")
        live.start()
        try:
            chan.send({"op": "ready", "pid": os.getpid()})
            await _serve_loop(reader, chan, executor)
        finally:
            await executor.close()
            await live.stop()
    finally:
        await store.close()
    return 0


async def _serve_loop(reader: asyncio.StreamReader, chan: _Channel, executor: Executor) -> None:
    running: dict[str, asyncio.Task[None]] = {}
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)

    async def run(task: LeasedTask) -> None:
        try:
            result = await executor.run(task)
        except asyncio.CancelledError:
            return  # cancelled by the Manager: it expects no result
        except Exception as e:
            result = ExecResult.crashed(e)
        finally:
            running.pop(task.id, None)
        chan.send({"op": "result", "id": task.id, "result": result.to_dict()})

    async def read() -> None:
        while True:
            line = await reader.readline()
            if not line:
                return  # the Manager closed the channel (or died)
            msg = json.loads(line)
            op = msg.get("op")
            if op == "run":
                task = LeasedTask.model_validate(msg["task"])
                running[task.id] = asyncio.create_task(run(task), name=f"task-{task.id}")
            elif op == "cancel":
                if (t := running.get(msg["id"])) is not None:
                    t.cancel()
            elif op == "drain":
                await executor.drain()
            elif op == "health":
                chan.send({"op": "health", "seq": msg.get("seq"), "in_flight": len(running)})
            elif op == "close":
                return

    reading = asyncio.create_task(read())
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({reading, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if stopped.done():  # SIGTERM: stop at the next checkpoint and report, then go
        await executor.drain()
        if running:
            await asyncio.wait(list(running.values()), timeout=30)
    for t in (reading, stopped, *running.values()):
        t.cancel()
    for t in (reading, stopped, *running.values()):
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t
