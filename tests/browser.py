"""Headless Chromium driven over the Chrome DevTools protocol (aiohttp's websocket client, already a
dependency through textual-serve: no browser-automation package needed).

The TUI in the page draws on a canvas (xterm.js), so what it shows is read from the websocket frames
the page receives (Network.webSocketFrameReceived): the terminal output, text between escape codes.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1280,800",
)


def chromium_or_skip() -> str:
    """The Debian chromium binary; CI (.ci/run) installs it and sets AGEN_REQUIRE_CHROMIUM=1."""
    path = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if path is None:
        if os.environ.get("AGEN_REQUIRE_CHROMIUM") == "1":
            raise AssertionError("chromium is not installed: apt-get install -y chromium")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return path


class Browser:
    """One headless Chromium with a fresh profile, and its first page."""

    def __init__(self, profile: Path) -> None:
        self.profile = profile
        self.proc: subprocess.Popen[bytes] | None = None
        self.session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.ids = itertools.count(1)
        self.replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.frames: list[bytes] = []
        """Every websocket frame the page received, decoded to bytes."""
        self.reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Browser:
        self.proc = self._launch()
        port_file = self.profile / "DevToolsActivePort"
        for _ in range(600):
            if port_file.exists() and port_file.read_text().strip():
                break
            assert self.proc.poll() is None, "chromium exited at start (see chromium.log)"
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{port}/json/list") as resp:
            targets = await resp.json()
        page = next(t for t in targets if t["type"] == "page")
        self.ws = await self.session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self.reader = asyncio.create_task(self._read())
        await self.send("Network.enable")
        await self.send("Page.enable")
        return self

    def _launch(self) -> subprocess.Popen[bytes]:
        binary = chromium_or_skip()
        self.profile.mkdir(parents=True, exist_ok=True)
        log = open(self.profile.parent / "chromium.log", "wb")  # noqa: SIM115 - owned by the child
        return subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=log,
            stderr=log,
        )

    async def __aexit__(self, *exc: object) -> None:
        if self.reader is not None:
            self.reader.cancel()
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    async def _read(self) -> None:
        assert self.ws is not None
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self.replies:
                self.replies.pop(data["id"]).set_result(data)
            elif data.get("method") == "Network.webSocketFrameReceived":
                frame = data["params"]["response"]
                payload = frame["payloadData"]
                self.frames.append(
                    base64.b64decode(payload) if frame["opcode"] == 2 else payload.encode()
                )

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        assert self.ws is not None
        n = next(self.ids)
        self.replies[n] = asyncio.get_running_loop().create_future()
        await self.ws.send_json({"id": n, "method": method, "params": params})
        reply = await asyncio.wait_for(self.replies[n], 60)
        assert "error" not in reply, reply
        return dict(reply.get("result", {}))

    def seen(self, text: str, since: int = 0) -> bool:
        """Whether the terminal output since frame ``since`` contains ``text``."""
        return text.encode() in b"".join(self.frames[since:])

    async def until_seen(self, text: str, since: int = 0, limit_s: float = 60) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit_s
        while not self.seen(text, since):
            assert loop.time() < deadline, f"the page never showed {text!r}"
            await asyncio.sleep(0.1)

    async def eval(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    async def key(self, key: str) -> None:
        """One key press into the focused terminal (a character, or Enter)."""
        if key == "Enter":
            spec = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"}
        else:
            spec = {"key": key, "text": key, "windowsVirtualKeyCode": ord(key.upper())}
        await self.send("Input.dispatchKeyEvent", type="keyDown", **spec)
        await self.send("Input.dispatchKeyEvent", type="keyUp", **{k: spec[k] for k in ("key",)})

    async def screenshot(self, path: Path) -> bytes:
        png = base64.b64decode((await self.send("Page.captureScreenshot", format="png"))["data"])
        await asyncio.to_thread(path.write_bytes, png)
        return png
