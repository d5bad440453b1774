"""A lean HTTP/1.1 client for load generators: JSON POSTs over one keep-alive connection each.

The load generator runs on the same machine as the server it measures. httpx spends 2-3 ms of CPU per
request here (measured on this project's 2-core machine), as much as the ``agen up`` serving it spends
on a whole task, so a run with httpx partly measured the load generator competing with the server for
the cores. This client writes each request and reads the status line, the headers and a
``Content-Length`` body with asyncio streams: tens of microseconds a request. Real HTTP still: the
server parses, authenticates and answers each request exactly as it would any other client's."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any
from urllib.parse import urlsplit


class HttpError(Exception):
    pass


class LeanClient:
    """One keep-alive connection to ``url`` (``http://host:port``), sending a bearer token."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._head = (
            f"Host: {self._host}:{self._port}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\n"
        )
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` as JSON; the JSON answer of a 200, else HttpError."""
        data = json.dumps(body).encode()
        request = (
            f"POST {path} HTTP/1.1\r\n{self._head}Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        reused = self._streams is not None
        if self._streams is None:
            self._streams = await asyncio.open_connection(self._host, self._port)
        reader, writer = self._streams
        writer.write(request)
        line = await reader.readline()
        if not line and reused:  # the server closed the idle keep-alive connection: once more, anew
            await self.close()
            self._streams = reader, writer = await asyncio.open_connection(self._host, self._port)
            writer.write(request)
            line = await reader.readline()
        if not line:
            raise HttpError(f"{path}: the server closed the connection without answering")
        status = int(line.split(b" ", 2)[1])
        length, close = 0, False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        payload = await reader.readexactly(length)
        if close:
            await self.close()
        if status != 200:
            raise HttpError(f"{path}: HTTP {status}: {payload[:300]!r}")
        answer: dict[str, Any] = json.loads(payload)
        return answer

    async def close(self) -> None:
        if self._streams is not None:
            writer = self._streams[1]
            self._streams = None
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
