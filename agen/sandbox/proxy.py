"""The egress proxy: the only way out of a sandbox, for the hosts ``network.allow`` names.

One proxy serves one run's sandboxes (agen starts it with the first sandboxed command or server
that has allowed hosts and stops it when the run ends). It listens on a Unix socket in a private
folder, which is bound into each sandbox (bridge.py carries the sandbox's TCP connections to it).
It speaks the two forms HTTP clients use with ``HTTP_PROXY``/``HTTPS_PROXY``: ``CONNECT host:port``
(a tunnel, for HTTPS) and a plain request with an absolute URL (``GET http://host/path``, for
HTTP). Each request's host is checked with policy.host_allowed before anything is connected; a
refused one gets ``403`` and a one-line reason, and every decision is handed to ``on_decision``
(agen records it as an event). Bytes are counted both ways for the proxy's whole life.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agen.sandbox.policy import host_allowed

HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT_S = 10.0
_HOP_HEADERS = frozenset(
    {"proxy-connection", "proxy-authorization", "connection", "keep-alive", "te", "upgrade"}
)


@dataclass(frozen=True)
class Decision:
    """One request the proxy allowed or refused."""

    host: str
    port: int
    method: str
    allowed: bool
    reason: str = ""


@dataclass
class Traffic:
    """What went through the proxy: requests allowed and refused, bytes out of and into the sandbox."""

    allowed: int = 0
    denied: int = 0
    bytes_out: int = 0
    bytes_in: int = 0
    hosts: dict[str, int] = field(default_factory=dict)


class _BadRequest(Exception):
    pass


def _parse_target(method: str, target: str) -> tuple[str, int, str]:
    """(host, port, origin-form path) of a proxy request's target."""
    if method == "CONNECT":
        host, sep, port = target.rpartition(":")
        if not sep or not port.isdigit():
            raise _BadRequest(f"CONNECT needs host:port (got {target!r})")
        return host.strip("[]"), int(port), ""
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        raise _BadRequest(
            f"a proxy request needs an absolute http:// URL (got {target[:100]!r}); "
            "HTTPS goes through CONNECT"
        )
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return parts.hostname, parts.port or 80, path


class EgressProxy:
    """An HTTP proxy on a Unix socket that lets through only the allowed hosts."""

    def __init__(
        self,
        allow: tuple[str, ...],
        on_decision: Callable[[Decision], None] | None = None,
        *,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.allow = allow
        self.on_decision = on_decision
        self.connect_timeout_s = connect_timeout_s
        self.traffic = Traffic()
        self.socket_path: str | None = None
        self._dir: str | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Listen; returns the socket's path (in a fresh 0700 folder of its own)."""
        if self.socket_path is not None:
            return self.socket_path
        self._dir = tempfile.mkdtemp(prefix="agen-egress-")
        path = os.path.join(self._dir, "egress.sock")
        self._server = await asyncio.start_unix_server(self._handle, path=path)
        os.chmod(path, 0o600)
        self.socket_path = path
        return path

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _decide(self, host: str, port: int, method: str) -> Decision:
        allowed = host_allowed(host, self.allow)
        reason = "" if allowed else f"{host} is not in the sandbox's network.allow"
        d = Decision(host.lower(), port, method, allowed, reason)
        if allowed:
            self.traffic.allowed += 1
            self.traffic.hosts[d.host] = self.traffic.hosts.get(d.host, 0) + 1
        else:
            self.traffic.denied += 1
        if self.on_decision is not None:
            self.on_decision(d)
        return d

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > HEAD_LIMIT:
            await _answer(writer, 431, "request head too large")
            return
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ", 2)
            host, port, path = _parse_target(method.upper(), target)
        except (ValueError, _BadRequest) as e:
            await _answer(writer, 400, str(e) if isinstance(e, _BadRequest) else "bad request line")
            return
        d = self._decide(host, port, method.upper())
        if not d.allowed:
            await _answer(writer, 403, f"agen sandbox: {d.reason}")
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), self.connect_timeout_s
            )
        except (OSError, TimeoutError) as e:
            await _answer(writer, 502, f"agen sandbox: cannot connect to {host}:{port}: {e}")
            return
        try:
            if method.upper() == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
            else:
                kept = [
                    h
                    for h in lines[1:]
                    if h and h.split(":", 1)[0].strip().lower() not in _HOP_HEADERS
                ]
                out = "\r\n".join(
                    [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
                )
                data = out.encode("latin-1")
                up_writer.write(data)
                self.traffic.bytes_out += len(data)
            await asyncio.gather(
                self._pipe(reader, up_writer, out=True), self._pipe(up_reader, writer, out=False)
            )
        finally:
            up_writer.close()
            with contextlib.suppress(Exception):
                await up_writer.wait_closed()

    async def _pipe(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, out: bool
    ) -> None:
        try:
            while data := await src.read(65536):
                if out:
                    self.traffic.bytes_out += len(data)
                else:
                    self.traffic.bytes_in += len(data)
                dst.write(data)
                await dst.drain()
        except OSError:
            pass
        finally:
            if dst.can_write_eof():
                with contextlib.suppress(OSError):
                    dst.write_eof()


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reasons = {
        400: "Bad Request",
        403: "Forbidden",
        431: "Request Header Fields Too Large",
        502: "Bad Gateway",
    }
    body = (text + "\n").encode()
    writer.write(
        f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()
