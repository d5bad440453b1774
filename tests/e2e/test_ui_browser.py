"""`agen ui` in headless Chromium: sign in with the printed link, see the fleet, approve from the browser."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.browser import Browser, chromium_or_skip
from tests.e2e.harness import AGEN, Up, wait_until
from tests.fleet_helpers import write_bundle
from tests.ports import free_port

TEST_SERVER = str(Path(__file__).parent.parent / "fixtures" / "mcp_test_server.py")


def gated(root: Path) -> Path:
    bundle = write_bundle(
        root,
        "gated",
        script=[
            {"toolCalls": [{"name": "t_echo", "arguments": {"text": "from the browser"}}]},
            {"text": "done"},
        ],
        config={
            "kind": "pool",
            "scale": {"min": 1, "max": 1},
            "permissions": {"ask": ["t.echo"], "default": "allow"},
        },
    )
    server = {"command": sys.executable, "args": [TEST_SERVER]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"t": server}}))
    return bundle


def start_ui(up: Up, port: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    out = open(log, "wb")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(
        [AGEN, "ui", "--listen", f"127.0.0.1:{port}"], env=up.env, stdout=out, stderr=out
    )

    def link() -> str | None:
        assert proc.poll() is None, log.read_text()
        found = re.search(r"open (http://\S+)", log.read_text())
        return found.group(1) if found else None

    return proc, wait_until(link, what="the sign-in link")


async def until_ended(up: Up, task_id: str) -> dict[str, Any]:
    for _ in range(120):
        got = up.http("GetTask", {"id": task_id, "wait_seconds": 1}).json()["task"]
        if got["state"] in ("succeeded", "failed", "cancelled", "expired"):
            return dict(got)
        await asyncio.sleep(0.5)
    raise AssertionError(f"task {task_id} never ended")


async def test_agen_ui_serves_the_fleet_to_a_signed_in_browser_which_can_approve(
    tmp_path: Path,
) -> None:
    chromium_or_skip()
    up = Up(tmp_path / "home").start()
    ui: subprocess.Popen[bytes] | None = None
    try:
        up.agen("deploy", str(gated(tmp_path / "bundles")))
        task = up.http("SubmitTask", {"deployment": "gated", "input": "ship"}).json()["task"]
        wait_until(
            lambda: up.http("ListApprovals", {}).json()["approvals"], what="a pending approval"
        )
        port = free_port()
        ui, link = start_ui(up, port, tmp_path / "ui.log")
        base = f"http://127.0.0.1:{port}/"
        assert (
            await asyncio.to_thread(httpx.get, base)
        ).status_code == 401  # no link, no cookie: nothing is served

        async with Browser(tmp_path / "profile") as browser:
            await browser.send("Page.navigate", url=link)
            await browser.until_seen("gated")  # the Fleet screen's deployment row
            await browser.until_seen("Fleet")
            png = await browser.screenshot(tmp_path / "fleet.png")
            assert png.startswith(b"\x89PNG") and len(png) > 10_000
            await browser.eval("document.querySelector('.xterm-helper-textarea').focus()")
            mark = len(browser.frames)
            await browser.key("a")
            await browser.until_seen("t.echo", since=mark)  # the Approvals screen's row
            mark = len(browser.frames)
            await browser.key("y")
            await browser.until_seen("for gated?", since=mark)  # the confirm dialog
            await browser.until_seen("Approve (a)", since=mark)  # its buttons, Cancel focused
            await browser.key("a")  # approving takes its key: a stray Enter would cancel
            # GetTask's wait also returns while the task still waits for an approval: poll to the end
            done = await until_ended(up, task["id"])
            assert done["state"] == "succeeded", done
            await browser.screenshot(tmp_path / "approved.png")

        assert (
            await asyncio.to_thread(httpx.get, link)
        ).status_code == 403  # the link signs in once
    finally:
        if ui is not None:
            ui.terminate()
            ui.wait(10)
        up.stop()
