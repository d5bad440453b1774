"""One live MCP connection per server, shared by all its tools, reconnected in place.

The SDK's ``Client`` is an async context manager built on anyio task groups, which
must be exited by the task that entered them; a background task per connection owns
it, so tools can call it from any task and a reconnect replaces what all of them see.
stdio servers start through agen's launcher (cleared environment, parent-death signal)
and their stderr is kept (redacted) for error messages; its EOF means the server died.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, TextIO

from agen.bundle.standard import HttpServer, StdioServer
from agen.errors import InvalidError, UnavailableError
from agen.runner.redact import Redactor
from agen.runner.secrets import ResolvedSecrets

log = logging.getLogger("agen.mcp")

ENV_ALLOWLIST = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "AGEN_HOME", "AGEN_WORKSPACE_ROOT")
CONNECT_TIMEOUT_S = 60.0
_WORKSPACE_REF = "${WORKSPACE}"
_STDERR_TAIL_LINES = 40


def agen_argv() -> list[str]:
    """How to run this very agen: the frozen binary itself, or ``python -m agen``."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "agen"]


def launcher_argv(keep: list[str]) -> list[str]:
    """The parent-death launcher (agen/runner/tools/_pdeath.py) run by this interpreter/binary."""
    names = ",".join(sorted(keep))
    if getattr(sys, "frozen", False):
        return [sys.executable, "mcp", "launch", "--keep", names, "--"]
    return [sys.executable, "-m", "agen.runner.tools._pdeath", "--keep", names, "--"]


def uses_workspace(server: StdioServer | HttpServer) -> bool:
    """True when the server's args name ``${WORKSPACE}`` (so it is bound to one run's directory)."""
    return isinstance(server, StdioServer) and any(_WORKSPACE_REF in a for a in server.args)


def server_environment(
    name: str, server: StdioServer, secrets: ResolvedSecrets, environ: dict[str, str] | None = None
) -> dict[str, str]:
    """A cleared environment: a small allowlist from agen's own, plus the declared env expanded."""
    host = dict(os.environ) if environ is None else environ
    env = {k: host[k] for k in ENV_ALLOWLIST if host.get(k)}
    if server.command == "agen" and not getattr(sys, "frozen", False) and host.get("PYTHONPATH"):
        env["PYTHONPATH"] = host["PYTHONPATH"]  # so `python -m agen` finds a source checkout
    env.update(secrets.expand_map(server.env, where=f"mcp.json mcpServers.{name}.env"))
    return env


def stdio_command(
    name: str, server: StdioServer, secrets: ResolvedSecrets, workspace: str | None
) -> tuple[list[str], dict[str, str]]:
    """The full command line (launcher + server) and the environment it starts with."""
    args: list[str] = []
    for i, arg in enumerate(server.args):
        where = f"mcp.json mcpServers.{name}.args[{i}]"
        if _WORKSPACE_REF in arg:
            if not workspace:
                raise InvalidError(
                    f"{where} uses ${{WORKSPACE}}, but this run has no task workspace; "
                    'set x-agen/config.json "workspace": {"mode": "per_task"}',
                    where=where,
                )
            arg = arg.replace(_WORKSPACE_REF, workspace)
        args.append(secrets.expand(arg, where=where))
    command = [*agen_argv(), *args] if server.command == "agen" else [server.command, *args]
    env = server_environment(name, server, secrets)
    return [*launcher_argv(list(env)), *command], env


class _StderrTail:
    """Drains a server's stderr on a thread, keeping the last lines (redacted); EOF = exited."""

    def __init__(self, name: str, redactor: Redactor) -> None:
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb")
        self._redactor = redactor
        self._lines: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL_LINES)
        self.closed = threading.Event()
        self._log = logging.getLogger(f"agen.mcp.{name}")
        threading.Thread(target=self._drain, name=f"mcp-stderr-{name}", daemon=True).start()

    def _drain(self) -> None:
        try:
            for raw in self._reader:
                line = self._redactor.redact(raw.decode("utf-8", "replace").rstrip())
                self._lines.append(line)
                self._log.debug("%s", line)
        except (OSError, ValueError):
            pass
        finally:
            self.closed.set()
            with contextlib.suppress(OSError):
                self._reader.close()

    def release_writer(self) -> None:
        """Drop agen's copy of the write end, so EOF arrives when the server's copy goes."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def tail(self, n: int = 8) -> str:
        return "\n".join(list(self._lines)[-n:])


@dataclass
class Live:
    """One connected session; ``generation`` tells a stale view from a fresh one."""

    client: Any  # mcp.Client
    generation: int
    stderr: _StderrTail | None
    stop: asyncio.Event
    owner: asyncio.Task[None]
    dead: bool = False

    def alive(self) -> bool:
        return not self.dead and not (self.stderr is not None and self.stderr.closed.is_set())


class ServerConn:
    """The one live connection to an MCP server; connects lazily and reconnects in place."""

    def __init__(
        self,
        name: str,
        server: StdioServer | HttpServer,
        secrets: ResolvedSecrets,
        redactor: Redactor,
        *,
        workspace: str | None = None,
        cwd_base: str | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.name = name
        self.server = server
        self._secrets = secrets
        self._redactor = redactor
        self._workspace = workspace
        self._cwd_base = cwd_base
        self._timeout = connect_timeout_s
        self._live: Live | None = None
        self._generation = 0
        self._lock = asyncio.Lock()
        self.connects = 0

    def healthy(self) -> bool:
        return self._live is not None and self._live.alive()

    async def get(self) -> Live:
        """The current connection, connecting (again) if there is none or it died."""
        live = self._live
        if live is not None and live.alive():
            return live
        return await self.reconnect(live.generation if live else 0)

    async def reconnect(self, seen_generation: int) -> Live:
        """Replace the connection seen at ``seen_generation``; callers racing here share one."""
        async with self._lock:
            live = self._live
            if live is not None and live.generation > seen_generation and live.alive():
                return live
            if live is not None:
                await self._stop(live)
            self._live = await self._connect()
            return self._live

    def mark_dead(self, generation: int) -> None:
        if self._live is not None and self._live.generation == generation:
            self._live.dead = True

    async def close(self) -> None:
        async with self._lock:
            if self._live is not None:
                await self._stop(self._live)
                self._live = None

    async def _stop(self, live: Live) -> None:
        live.dead = True
        live.stop.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(live.owner), timeout=10)
        if not live.owner.done():
            live.owner.cancel()
        if live.stderr is not None:
            live.stderr.release_writer()

    async def _connect(self) -> Live:
        from mcp import Client

        stderr: _StderrTail | None = None
        http: Any = None
        if isinstance(self.server, StdioServer):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            argv, env = stdio_command(self.name, self.server, self._secrets, self._workspace)
            cwd = self.server.cwd
            if cwd and self._cwd_base and not os.path.isabs(cwd):
                cwd = os.path.join(self._cwd_base, cwd)
            stderr = _StderrTail(self.name, self._redactor)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
            client = Client(stdio_client(params, errlog=stderr.writer), cache=None)
        else:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            headers = self._secrets.expand_map(self.server.headers, where=f"mcp.json mcpServers.{self.name}.headers")
            http = create_mcp_http_client(headers=headers)
            client = Client(streamable_http_client(self.server.url, http_client=http), cache=None)

        self._generation += 1
        stop = asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        owner = asyncio.create_task(self._own(client, http, ready, stop), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout=self._timeout)
        except BaseException as e:
            stop.set()
            owner.cancel()
            what = f"did not answer within {self._timeout:g}s" if isinstance(e, TimeoutError) else describe(e)
            if stderr is not None:
                stderr.release_writer()
                await asyncio.to_thread(stderr.closed.wait, 1.0)
            if isinstance(e, asyncio.CancelledError):
                raise
            raise UnavailableError(self._failure(what, stderr), server=self.name) from None
        if stderr is not None:
            stderr.release_writer()
        self.connects += 1
        return Live(client, self._generation, stderr, stop, owner)

    async def _own(self, client: Any, http: Any, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                if http is not None:  # the SDK leaves a client it was given open
                    await stack.enter_async_context(http)
                await stack.enter_async_context(client)
                if not ready.done():
                    ready.set_result(None)
                await stop.wait()
        except BaseException as e:  # the SDK raises ExceptionGroups from its task groups
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else RuntimeError(describe(e)))
            elif not stop.is_set():
                log.warning("MCP server %s: connection ended: %s", self.name, self._redactor.redact(describe(e)))
            if isinstance(e, asyncio.CancelledError):
                raise

    def _failure(self, what: str, stderr: _StderrTail | None) -> str:
        where = self.server.url if isinstance(self.server, HttpServer) else self.server.command
        msg = f"MCP server {self.name} ({where}) could not be started: {what}"
        tail = stderr.tail() if stderr is not None else ""
        if tail:
            msg += "\n  its stderr ended with:\n    " + "\n    ".join(tail.splitlines())
        return self._redactor.redact(msg + "\n  check mcp.json (command, args, env) and run the server by hand to see it start")


def describe(e: BaseException) -> str:
    """A one-line description of an exception, unwrapping the SDK's exception groups."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    text = str(e).strip()
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
