"""One live MCP connection per server, shared by all its tools, reconnected in place.

The SDK's ``Client`` is an async context manager built on anyio task groups, which
must be exited by the task that entered them; a background task per connection owns
it, so tools can call it from any task and a reconnect replaces what all of them see.
stdio servers start through agen's launcher (cleared environment, parent-death signal)
and their stderr is kept (redacted) for error messages; its EOF means the server died.

Starting is bounded: a server must answer ``initialize`` within its mcp.json
``startupTimeoutMs`` (default 30 s). One that does not is remembered as hung for
HANG_COOLDOWN_S, and starts of the same server in that time fail at once instead of
waiting again. Failures are one line each, naming the server, what happened (with the
HTTP status of an HTTP server's refusal) and what to do; a line on a stdio server's
stdout that is not MCP is reported once per connection, not as a traceback.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from agen.bundle._base import HUB_URL_ENV, HUB_URL_REF
from agen.bundle.standard import HttpServer, StdioServer
from agen.errors import InvalidError, UnavailableError
from agen.runner.redact import Redactor
from agen.runner.sandboxing import Sandboxing
from agen.runner.secrets import ResolvedSecrets
from agen.sandbox.bwrap import Launch
from agen.sandbox.limits import limit_args

log = logging.getLogger("agen.mcp")

STARTUP_TIMEOUT_S = 30.0
HANG_COOLDOWN_S = 300.0
_SHUTDOWN_WAIT_S = 10.0
MCP_HTTP_TIMEOUT_S = 30.0
MCP_HTTP_READ_S = 300.0
"""An HTTP MCP server's client timeouts: those of the MCP SDK's own default client."""


class _NoParseTraceback(logging.Filter):
    """Drop the SDK's traceback for a non-MCP stdout line; ServerConn reports it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to parse JSONRPC message")


logging.getLogger("mcp.client.stdio").addFilter(_NoParseTraceback())


class HangMemory:
    """Servers that did not answer initialize lately, so a restart does not wait on them again."""

    def __init__(
        self, cooldown_s: float = HANG_COOLDOWN_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.cooldown_s = cooldown_s
        self.clock = clock
        self._hung: dict[str, tuple[float, float]] = {}  # key -> (when, timeout it had)

    def hung(self, key: str, timeout_s: float) -> None:
        self._hung[key] = (self.clock(), timeout_s)

    def answered(self, key: str) -> None:
        self._hung.pop(key, None)

    def recent(self, key: str) -> tuple[float, float] | None:
        """(seconds ago, timeout it had) if ``key`` hung within the cool-down."""
        seen = self._hung.get(key)
        if seen is None:
            return None
        ago = self.clock() - seen[0]
        if ago >= self.cooldown_s:
            del self._hung[key]
            return None
        return ago, seen[1]


HANGS = HangMemory()

ENV_ALLOWLIST = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ")
"""What every stdio server and run command gets of agen's environment; anything more is granted
per server (harness.json sandbox.servers.<name>.env) or declared in its mcp.json env."""
_WORKSPACE_REF = "${WORKSPACE}"
_STDERR_TAIL_LINES = 40


def agen_argv() -> list[str]:
    """How to run this very agen: the frozen binary itself, or ``python -m agen``."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "agen"]


def launcher_argv(keep: list[str], options: list[str] | None = None) -> list[str]:
    """The parent-death launcher (agen/runner/tools/_pdeath.py) run by this interpreter/binary;
    ``options`` are its limit options (agen.sandbox.limits.limit_args)."""
    names = ",".join(sorted(keep))
    rest = ["--keep", names, *(options or []), "--"]
    if getattr(sys, "frozen", False):
        return [sys.executable, "mcp", "launch", *rest]
    return [sys.executable, "-m", "agen.runner.tools._pdeath", *rest]


def hub_url_expanded(name: str, url: str, environ: Mapping[str, str] | None = None) -> str:
    """``url`` with ``${AGEN_HUB_URL}`` replaced by the URL of the Hub running this agent, which
    ``agen up`` and ``agen nest run`` put in ``AGEN_HUB_URL``; a clear error without one."""
    if not url.startswith(HUB_URL_REF):
        return url
    hub = (os.environ if environ is None else environ).get(HUB_URL_ENV, "").rstrip("/")
    if not hub:
        raise InvalidError(
            f"mcp.json mcpServers.{name}.url uses {HUB_URL_REF}, but no Hub URL is known here; run "
            f"the agent under agen up or agen nest run, or set {HUB_URL_ENV}",
            where=f"mcp.json mcpServers.{name}.url",
        )
    return hub + url[len(HUB_URL_REF) :]


def uses_workspace(server: StdioServer | HttpServer) -> bool:
    """True when the server's args name ``${WORKSPACE}`` (so it is bound to one run's directory)."""
    return isinstance(server, StdioServer) and any(_WORKSPACE_REF in a for a in server.args)


def server_environment(
    name: str,
    server: StdioServer,
    secrets: ResolvedSecrets,
    environ: dict[str, str] | None = None,
    grant: tuple[str, ...] = (),
) -> dict[str, str]:
    """A cleared environment: a small allowlist from agen's own and the variables granted to this
    server, plus its declared env expanded (the secrets it names, and only those)."""
    host = dict(os.environ) if environ is None else environ
    env = {k: host[k] for k in (*ENV_ALLOWLIST, *grant) if host.get(k)}
    if server.command == "agen" and not getattr(sys, "frozen", False) and host.get("PYTHONPATH"):
        env["PYTHONPATH"] = host["PYTHONPATH"]  # so `python -m agen` finds a source checkout
    env.update(secrets.expand_map(server.env, where=f"mcp.json mcpServers.{name}.env"))
    return env


def workspace_root_arg(server: StdioServer, args: list[str]) -> str | None:
    """The ``--root`` of ``agen mcp workspace`` (its folder is writable in its sandbox)."""
    if server.command != "agen" or args[:2] != ["mcp", "workspace"]:
        return None
    for i, arg in enumerate(args):
        if arg == "--root" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--root="):
            return arg.split("=", 1)[1]
    return None


def stdio_command(
    name: str,
    server: StdioServer,
    secrets: ResolvedSecrets,
    workspace: str | None,
    sandbox: Sandboxing | None = None,
    *,
    grant: tuple[str, ...] = (),
    cwd: str | None = None,
    bundle_root: str | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The full command line (launcher + server, in bwrap when ``sandbox``) and its environment.

    In the sandbox the server reads this agen and its Python, the bundle folder and its cwd, and
    writes the run's workspace when its args use ``${WORKSPACE}`` (or the ``--root`` of
    ``agen mcp workspace``); ``sandbox.prepare`` must have been awaited."""
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
    env = server_environment(name, server, secrets, grant=grant)
    if sandbox is None:
        return [*launcher_argv(list(env)), *command], env
    writable = workspace_root_arg(server, args) or (workspace if uses_workspace(server) else None)
    reads = [p for p in (bundle_root, cwd) if p and os.path.isabs(p)]
    launch = Launch(workspace=writable, cwd=cwd or writable, runtime=True, read=tuple(reads))
    env = sandbox.environment(env)
    launcher = launcher_argv(list(env), limit_args(sandbox.policy.limits))
    return [*launcher, *sandbox.command(command, launch)], env


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
        connect_timeout_s: float | None = None,
        hangs: HangMemory | None = None,
        sandbox: Sandboxing | None = None,
        env_grant: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.sandbox = sandbox
        self._env_grant = env_grant
        self.server = server
        self._secrets = secrets
        self._redactor = redactor
        self._workspace = workspace
        self._cwd_base = cwd_base
        if connect_timeout_s is None:
            ms = server.startup_timeout_ms
            connect_timeout_s = ms / 1000 if ms is not None else STARTUP_TIMEOUT_S
        self._timeout = connect_timeout_s
        self._hangs = HANGS if hangs is None else hangs
        self._http_error: str | None = (
            None  # the last HTTP error status, e.g. "HTTP 401 Unauthorized"
        )
        self._stray_reported = False
        self.login_needed: str | None = None  # why the server's OAuth login must be renewed
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

    def current(self) -> Live | None:
        """The connection as it is now (None before the first), without connecting."""
        return self._live

    def mark_dead(self, generation: int) -> None:
        if self._live is not None and self._live.generation == generation:
            self._live.dead = True

    async def close(self) -> None:
        async with self._lock:
            if self._live is not None:
                await self._stop(self._live)
                self._live = None
            if self.sandbox is not None:
                await self.sandbox.close()

    async def _stop(self, live: Live) -> None:
        """Ask the connection's owner task to close the session, wait up to 10 s, then cancel it. The
        caller's own cancellation is never swallowed: the connection is cancelled and it propagates."""
        live.dead = True
        live.stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(live.owner), timeout=10)
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                live.owner.cancel()
                raise
        except TimeoutError:
            log.warning(
                "MCP server %s did not close within 10 s; its connection is cancelled", self.name
            )
        except (
            Exception
        ) as e:  # the session ended with an error while closing: said once, with the server
            log.warning(
                "MCP server %s: closing its connection failed: %s: %s",
                self.name,
                type(e).__name__,
                e,
            )
        finally:
            if not live.owner.done():
                live.owner.cancel()
            if live.stderr is not None:
                live.stderr.release_writer()

    def _key(self) -> str:
        if isinstance(self.server, HttpServer):
            return f"{self.name}\0{self.server.url}"
        return "\0".join([self.name, self.server.command, *self.server.args])

    def _oauth(self, url: str, headers: dict[str, str]) -> Any:
        """The stored ``agen mcp login`` of an HTTP server that sends no Authorization header of its
        own (agen/runner/tools/mcp_oauth.py), or None."""
        if any(k.lower() == "authorization" for k in headers):
            return None
        from agen.runner.tools.mcp_oauth import run_auth

        def needed(message: str) -> None:
            self.login_needed = message

        return run_auth(self.name, url, needed)

    def http_error(self) -> str | None:
        """The last HTTP error status the server answered with (HTTP servers), e.g. ``HTTP 401 Unauthorized``."""
        return self._http_error

    async def _on_message(self, message: Any) -> None:
        """Transport faults the SDK hands over; a non-MCP stdout line is reported once per connection."""
        if not isinstance(message, Exception):
            return
        if isinstance(self.server, StdioServer) and isinstance(message, ValueError):
            if self._stray_reported:
                return
            self._stray_reported = True
            text = (
                f"MCP server {self.name} wrote a line to stdout that is not MCP JSON-RPC "
                f"({_stray_line(message)}); it was ignored. A stdio server must keep stdout for MCP and "
                "log to stderr: fix the server (or its args) so it prints no banner"
            )
        else:
            text = f"MCP server {self.name}: transport error: {describe(message)}"
        log.warning("%s", self._redactor.redact(text))

    async def _on_response(self, response: Any) -> None:
        if response.status_code >= 400:
            self._http_error = f"HTTP {response.status_code} {response.reason_phrase}".strip()

    async def _connect(self) -> Live:
        from mcp import Client

        key = self._key()
        recent = self._hangs.recent(key)
        if recent is not None:
            ago, waited = recent
            raise UnavailableError(
                self._redactor.redact(
                    f"MCP server {self.name} ({self._where()}) did not answer initialize within {waited:g}s "
                    f"{ago:.0f}s ago, so it is not started again for {self._hangs.cooldown_s:g}s; check that it "
                    f"speaks MCP on {'its URL' if isinstance(self.server, HttpServer) else 'stdio'}, or raise "
                    f"mcp.json mcpServers.{self.name}.startupTimeoutMs if it is only slow"
                ),
                server=self.name,
            )
        stderr: _StderrTail | None = None
        http: Any = None
        self._http_error = None
        self._stray_reported = False
        if isinstance(self.server, StdioServer):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            cwd = self.server.cwd
            if cwd and self._cwd_base and not os.path.isabs(cwd):
                cwd = os.path.join(self._cwd_base, cwd)
            if self.sandbox is not None:
                await self.sandbox.prepare()
            argv, env = stdio_command(
                self.name,
                self.server,
                self._secrets,
                self._workspace,
                self.sandbox,
                grant=self._env_grant,
                cwd=cwd,
                bundle_root=self._cwd_base,
            )
            stderr = _StderrTail(self.name, self._redactor)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
            client = Client(
                stdio_client(params, errlog=stderr.writer),
                cache=None,
                message_handler=self._on_message,
            )
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = self._secrets.expand_map(
                self.server.headers, where=f"mcp.json mcpServers.{self.name}.headers"
            )
            url = hub_url_expanded(self.name, self.server.url)
            self.login_needed = None
            # the client streamable_http_client documents passing for headers, with the timeouts its
            # own default client has (30 s, and 300 s to read: a server may hold a stream open)
            http = httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(MCP_HTTP_TIMEOUT_S, read=MCP_HTTP_READ_S),
                auth=self._oauth(url, headers),
            )
            http.event_hooks["response"].append(self._on_response)
            client = Client(
                streamable_http_client(url, http_client=http),
                cache=None,
                message_handler=self._on_message,
            )

        self._generation += 1
        stop = asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        owner = asyncio.create_task(self._own(client, http, ready, stop), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout=self._timeout)
        except BaseException as e:
            stop.set()
            ready.cancel()  # nobody reads it now: the owner must not leave an exception on it
            owner.cancel()
            # Let the SDK shut the server down (it closes stdin, then stops the process) before going on.
            await asyncio.wait({owner}, timeout=_SHUTDOWN_WAIT_S)
            todo = None
            if isinstance(e, TimeoutError):
                self._hangs.hung(key, self._timeout)
                what = f"it did not answer initialize within {self._timeout:g}s"
                todo = (
                    f"check that it speaks MCP (run it by hand), or raise mcp.json "
                    f"mcpServers.{self.name}.startupTimeoutMs (default {STARTUP_TIMEOUT_S * 1000:.0f}) "
                    "if it is only slow to start"
                )
            elif self.login_needed is not None:
                raise UnavailableError(self.login_needed, server=self.name) from None
            else:
                what = describe(e)
                if self._http_error is not None:
                    what = f"it answered {self._http_error} ({what})"
                    todo = _http_todo(self._http_error, self.name)
            if stderr is not None:
                stderr.release_writer()
                await asyncio.to_thread(stderr.closed.wait, 1.0)
            if isinstance(e, asyncio.CancelledError):
                raise
            raise UnavailableError(self._failure(what, stderr, todo), server=self.name) from None
        self._hangs.answered(key)
        if stderr is not None:
            stderr.release_writer()
        self.connects += 1
        return Live(client, self._generation, stderr, stop, owner)

    async def _own(
        self, client: Any, http: Any, ready: asyncio.Future[None], stop: asyncio.Event
    ) -> None:
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
                log.warning(
                    "MCP server %s: connection ended: %s",
                    self.name,
                    self._redactor.redact(describe(e)),
                )
            if isinstance(e, asyncio.CancelledError):
                raise

    def _where(self) -> str:
        return self.server.url if isinstance(self.server, HttpServer) else self.server.command

    def _failure(self, what: str, stderr: _StderrTail | None, todo: str | None = None) -> str:
        todo = (
            todo or "check mcp.json (command, args, env) and run the server by hand to see it start"
        )
        if self.sandbox is not None:
            todo += (
                f"; it runs in the sandbox: grant what it needs in x-agen/harness.json "
                f"sandbox.servers.{self.name} (filesystem, network, env), or set its enabled to false"
            )
        msg = f"MCP server {self.name} ({self._where()}) could not be started: {what}; {todo}"
        tail = stderr.tail() if stderr is not None else ""
        if tail:
            msg += "\n  its stderr ended with:\n    " + "\n    ".join(tail.splitlines())
        return self._redactor.redact(msg)


def _stray_line(e: Exception) -> str:
    """The offending stdout line of a JSON-RPC parse error, shortened."""
    errors = getattr(e, "errors", None)
    line: Any = None
    if callable(errors):
        with contextlib.suppress(Exception):
            line = errors()[0].get("input")
    text = str(line) if line is not None else describe(e)
    return repr(text[:120] + ("…" if len(text) > 120 else ""))


def _http_todo(status: str, name: str) -> str:
    if status.startswith(("HTTP 401", "HTTP 403")):
        return (
            f"check the credentials in mcp.json mcpServers.{name}.headers (e.g. Authorization) and the "
            f"secret they use, or, for a server that uses OAuth, run `agen mcp login {name}`"
        )
    return f"check mcp.json mcpServers.{name}.url and that the server is healthy"


def describe(e: BaseException) -> str:
    """A one-line description of an exception, unwrapping the SDK's exception groups."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    text = str(e).strip()
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
