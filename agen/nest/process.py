"""The ``process`` instance backend: each instance is a child ``agen host serve`` (agen/nest/host.py).

The child is tied to the Nest's life (Linux parent-death signal set before exec), optionally
capped with RLIMIT_AS (``--host-memory-limit``; a limit that cannot be applied fails the
start), and driven over its stdin/stdout with JSON lines. A child that exits or stops
answering health checks fails its instance; the tasks it held go back to the queue with an
attempt counted, and their runs resume from their checkpoints on the replacement. The child's live
events (agen.domain.live) come over the same channel and are published on this process's bus, as
if its runs ran here: the Hub beside this Nest reads them there, a Hub elsewhere gets them from the
Manager's forwarding.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import json
import logging
import os
import re
import secrets
import signal
import sys
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agen.bundle import Bundle
from agen.bundle.archive import pack
from agen.domain.live import BUS, LiveBus
from agen.errors import InvalidError, UnavailableError
from agen.nest import host
from agen.nest.executor import ExecResult, ExecutorFactory, ProgressSink
from agen.nest.port import LeasedTask
from agen.wire.nests import LiveEventWire

log = logging.getLogger("agen.nest")
START_TIMEOUT_S = 120.0
HEALTH_EVERY_S = 5.0
HEALTH_TIMEOUT_S = 15.0
STOP_GRACE_S = 10.0
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_LIVE_BATCH = TypeAdapter(list[LiveEventWire])


def parse_memory_limit(text: str) -> int:
    """Bytes from ``512M``, ``2G``, ``1.5GiB`` or a plain byte count; 0 = no limit."""
    m = _SIZE.match(text)
    if m is None:
        raise InvalidError(
            f"--host-memory-limit {text!r}: use a size like 512M or 2G (0: no limit)",
            field="--host-memory-limit",
        )
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def host_argv() -> list[str]:
    """How to start ``agen host serve`` with this very agen: the frozen binary, or ``python -m agen``."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "host", "serve"]
    return [sys.executable, "-m", "agen", "host", "serve"]


def check_memory_limit(limit: int) -> None:
    """Refuse a limit the kernel will not apply (above the hard limit), before starting anything."""
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and limit > hard:
        raise UnavailableError(
            f"--host-memory-limit {limit} bytes is above this process's hard RLIMIT_AS "
            f"({hard} bytes); lower it or raise the hard limit (ulimit -Hv)",
            limit=limit,
        )


def _preexec(memory_limit: int) -> Any:
    """Runs in the child between fork and exec: parent-death signal, then the memory cap."""
    import resource

    prctl: Any = None
    if sys.platform.startswith("linux"):
        import ctypes

        prctl = ctypes.CDLL(
            None, use_errno=True
        ).prctl  # resolved before fork: no dlopen in the child
    parent = os.getpid()

    def setup() -> None:
        if prctl is not None:
            prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the Nest died before the signal was armed
                os._exit(1)
        if memory_limit:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    return setup


class ProcessExecutor:
    """The Manager's side of one ``agen host serve`` child."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        instance_id: str,
        progress: ProgressSink | None = None,
        bus: LiveBus = BUS,
    ) -> None:
        self.proc = proc
        self.instance_id = instance_id
        self.progress = progress
        self.bus = bus  # where the child's live events are published
        self._pending: dict[str, asyncio.Future[ExecResult]] = {}
        self._pongs: dict[int, asyncio.Future[None]] = {}
        self._seq = 0
        self._exit: str | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=30)
        self._ready: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._tasks = [
            asyncio.create_task(self._read(), name=f"host-{instance_id}-read"),
            asyncio.create_task(self._forward_stderr(), name=f"host-{instance_id}-stderr"),
        ]

    @classmethod
    async def start(
        cls,
        store_url: str,
        bundle: Bundle,
        instance_id: str,
        *,
        memory_limit: int = 0,
        start_timeout_s: float = START_TIMEOUT_S,
        progress: ProgressSink | None = None,
        platform_secrets: Mapping[str, str] | None = None,
    ) -> ProcessExecutor:
        if memory_limit:
            check_memory_limit(memory_limit)
        token = secrets.token_urlsafe(32)
        env = {
            **os.environ,
            host.ENV_STORE: store_url,
            host.ENV_INSTANCE: instance_id,
            host.ENV_DIGEST: bundle.digest,
            host.ENV_TOKEN: token,
        }
        try:
            proc = await asyncio.create_subprocess_exec(
                *host_argv(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                preexec_fn=_preexec(memory_limit),
                start_new_session=True,
                limit=host.LINE_LIMIT,
            )
        except Exception as e:  # OSError, or SubprocessError when the memory cap could not be set
            what = (
                f" with --host-memory-limit {memory_limit} bytes (RLIMIT_AS)"
                if memory_limit
                else ""
            )
            raise UnavailableError(
                f"cannot start agen host serve{what}: {e}", instance=instance_id
            ) from None
        ex = cls(proc, instance_id, progress)
        try:
            # platform secret values go over the pipe, never in the child's environment or argv; so
            # does the bundle (the host reads no definitions from the store: agen.store.host_tables)
            ex._send(
                {
                    "op": "hello",
                    "token": token,
                    "platform": dict(platform_secrets or {}),
                    "bundle": base64.b64encode(pack(bundle.files)).decode(),
                }
            )
            try:
                await asyncio.wait_for(asyncio.shield(ex._ready), start_timeout_s)
            except TimeoutError:
                raise UnavailableError(
                    f"agen host serve for instance {instance_id} did not get ready in "
                    f"{start_timeout_s:.0f}s",
                    instance=instance_id,
                ) from None
        except BaseException:
            await ex.close()
            raise
        ex._tasks.append(asyncio.create_task(ex._health_loop(), name=f"host-{instance_id}-health"))
        return ex

    # -- the channel ------------------------------------------------------------------------

    def _send(self, msg: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        if stdin is None or stdin.is_closing():
            return
        stdin.write(json.dumps(msg, separators=(",", ":"), default=str).encode() + b"\n")

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                self._dispatch(json.loads(line))
        except (ValueError, OSError) as e:
            log.warning("instance %s: host channel broke: %s", self.instance_id, e)
        code = await self.proc.wait()
        await asyncio.sleep(0.05)  # let the stderr tail catch up for the message
        tail = "\n".join(list(self._stderr)[-8:])
        self._gone(f"host process exited with code {code}" + (f": {tail}" if tail else ""))

    def _dispatch(self, msg: dict[str, Any]) -> None:
        op = msg.get("op")
        if op == "result":
            fut = self._pending.pop(msg["id"], None)
            if fut is not None and not fut.done():
                fut.set_result(ExecResult.from_dict(msg["result"]))
        elif op == "health":
            pong = self._pongs.pop(int(msg.get("seq") or 0), None)
            if pong is not None and not pong.done():
                pong.set_result(None)
        elif op == "progress" and self.progress is not None:
            task: asyncio.Task[None] = asyncio.create_task(
                self._report_progress(
                    self.progress, str(msg.get("task_id")), dict(msg.get("progress") or {})
                )
            )
            self._tasks.append(task)
            task.add_done_callback(self._forget)
        elif op == "live":
            self._publish_live(msg.get("events"))
        elif op == "ready" and not self._ready.done():
            self._ready.set_result(msg)
        elif op == "failed" and not self._ready.done():
            self._ready.set_exception(
                UnavailableError(str(msg.get("error")), instance=self.instance_id)
            )

    def _publish_live(self, events: object) -> None:
        """The child's batch of live events, onto this process's bus (one line per bad batch: a
        host of another agen version, which the hello would have refused first)."""
        try:
            batch = _LIVE_BATCH.validate_python(events)
        except ValidationError as e:
            log.warning(
                "instance %s: a batch of live events not understood: %s", self.instance_id, e
            )
            return
        for item in batch:
            self.bus.publish(item.event())

    @staticmethod
    async def _report_progress(sink: ProgressSink, task_id: str, progress: dict[str, Any]) -> None:
        await sink(task_id, progress)

    def _forget(self, task: asyncio.Task[Any]) -> None:
        with contextlib.suppress(ValueError):
            self._tasks.remove(task)
        if not task.cancelled() and task.exception() is not None:
            log.info("instance %s: progress not recorded: %s", self.instance_id, task.exception())

    async def _forward_stderr(self) -> None:
        assert self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            text = line.decode("utf-8", "replace").rstrip()
            self._stderr.append(text)
            print(f"[host {self.instance_id[-6:]}] {text}", file=sys.stderr, flush=True)

    def _gone(self, reason: str) -> None:
        if self._exit is None:
            self._exit = reason
        if not self._ready.done():
            self._ready.set_exception(
                UnavailableError(
                    f"agen host serve failed to start: {reason}", instance=self.instance_id
                )
            )
        for task_id, fut in list(self._pending.items()):
            if not fut.done():
                fut.set_result(
                    ExecResult(
                        status="released",
                        outcome=None,
                        count_attempt=True,
                        release=f"the instance's host process stopped mid-task ({reason})",
                    )
                )
            self._pending.pop(task_id, None)

    async def _health_loop(self) -> None:
        while self._exit is None:
            await asyncio.sleep(HEALTH_EVERY_S)
            self._seq += 1
            pong: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._pongs[self._seq] = pong
            self._send({"op": "health", "seq": self._seq})
            try:
                await asyncio.wait_for(pong, HEALTH_TIMEOUT_S)
            except TimeoutError:
                self._gone(
                    f"host process stopped answering health checks for {HEALTH_TIMEOUT_S:.0f}s"
                )
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()

    # -- Executor -------------------------------------------------------------------------

    async def run(self, task: LeasedTask) -> ExecResult:
        if self._exit is not None:
            return ExecResult(
                status="released",
                outcome=None,
                release=f"the instance's host is gone ({self._exit})",
            )
        fut: asyncio.Future[ExecResult] = asyncio.get_running_loop().create_future()
        self._pending[task.id] = fut
        self._send({"op": "run", "task": task.model_dump(mode="json")})
        try:
            return await fut
        except asyncio.CancelledError:
            self._pending.pop(task.id, None)
            self._send({"op": "cancel", "id": task.id})
            raise

    async def drain(self) -> None:
        self._send({"op": "drain"})

    def exit_reason(self) -> str | None:
        return self._exit

    async def close(self) -> None:
        """Ask the host to stop; SIGTERM after the grace period, SIGKILL after another."""
        self._send({"op": "close"})
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(sig)
            try:
                await asyncio.wait_for(self.proc.wait(), STOP_GRACE_S)
                break
            except TimeoutError:
                continue
        if self._exit is None:
            self._exit = "stopped"
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


def process_factory(
    store_url: str, *, memory_limit: int = 0, progress: ProgressSink | None = None
) -> ExecutorFactory:
    """An ExecutorFactory starting one ``agen host serve`` child per instance."""

    async def build(
        bundle: Bundle, instance_id: str, platform_secrets: Mapping[str, str]
    ) -> ProcessExecutor:
        return await ProcessExecutor.start(
            store_url,
            bundle,
            instance_id,
            memory_limit=memory_limit,
            progress=progress,
            platform_secrets=platform_secrets,
        )

    return build
