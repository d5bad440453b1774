"""OAuth for remote MCP servers, end to end and offline: a real MCP server behind the SDK's own OAuth
(tests/fixtures/mcp_oauth_server.py, a subprocess on loopback), `agen mcp login` as a user runs it
(the test plays the browser: it GETs the printed URL and follows the redirect to agen's loopback
callback), then runs whose calls use the sealed tokens, a refresh, and a revoked login."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agen.bundle import Bundle, load_bundle
from agen.errors import UnavailableError
from agen.runner.loop import Runner
from agen.runner.tooling import build_tooling
from agen.runner.turn import TurnPolicy
from agen.runner.types import RunRequest
from agen.store import SQLiteStore
from tests.cli_helpers import run_agen
from tests.integration.mcp_helpers import FIXTURES, wait_port
from tests.ports import free_port
from tests.unit.bundle_helpers import make_bundle

SERVER = str(FIXTURES / "mcp_oauth_server.py")


@pytest.fixture
def oauth_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        wait_port(port)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    monkeypatch.setenv("AGEN_HOME", str(h))
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    return h


def bundle_dir(tmp_path: Path, base: str) -> Path:
    script = [{"toolCalls": [{"name": "remote_whoami", "arguments": {}}]}, {"text": "done"}]
    return make_bundle(
        tmp_path,
        mcp={"mcpServers": {"remote": {"type": "http", "url": f"{base}/mcp"}}},
        harness={"provider": "fake", "fake": {"script": script}},
        config={"kind": "pool", "permissions": {"default": "allow"}},
    )


def login(folder: Path) -> str:
    """`agen mcp login remote` in ``folder``, with the test as the browser; returns its output."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agen",
            "mcp",
            "login",
            "remote",
            "--no-browser",
            "--timeout",
            "60s",
        ],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    printed = [proc.stdout.readline(), proc.stdout.readline()]
    assert printed[0] == "Open this URL to log in to remote:\n", printed
    url = printed[1].strip()
    assert "code_challenge_method=S256" in url and "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in url
    page = httpx.get(url, follow_redirects=True, timeout=30)  # the server approves at once
    assert page.status_code == 200 and page.text == "agen is logged in. You can close this window."
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return "".join(printed) + out


def runner(store: SQLiteStore, b: Bundle) -> Runner:
    t = build_tooling(b, store)
    return Runner(
        store,
        b,
        owner="test",
        toolsets=t.toolsets,
        policy=t.policy,
        redactor=t.redactor,
        turn_policy=TurnPolicy(max_retries=0, backoff_base_s=0.001),
    )


async def tool_results(store: SQLiteStore, run_id: str) -> list[dict[str, Any]]:
    return await store.all(
        "SELECT content, is_error FROM messages WHERE run_id = ? AND role = 'tool' ORDER BY seq",
        (run_id,),
    )


async def server_route(method: str, url: str) -> Any:
    """The fixture server's own routes (state, expire, revoke)."""
    async with httpx.AsyncClient(timeout=30) as client:
        return (await client.request(method, url)).json()


def stored(home: Path) -> tuple[Path, dict[str, Any]]:
    files = [p for p in (home / "mcp-oauth").iterdir() if p.suffix == ".json"]
    assert len(files) == 1
    return files[0], json.loads(files[0].read_text())


async def test_login_then_a_run_calls_the_server_and_a_revoked_login_is_a_clear_tool_error(
    tmp_path: Path, home: Path, oauth_server: str
) -> None:
    folder = bundle_dir(tmp_path, oauth_server)
    assert login(folder).endswith(f"logged in to remote ({oauth_server}/mcp): it lists 1 tool\n")
    path, data = stored(home)
    assert (
        path.stat().st_mode & 0o777 == 0o600
        and (home / "mcp-oauth").stat().st_mode & 0o777 == 0o700
    )
    issued = (await server_route("GET", f"{oauth_server}/test/state"))["access"]
    assert len(issued) == 1 and issued[0] not in path.read_text()  # sealed, not in the clear
    assert data["tokens"].startswith("sealed:v1:") and data["client"].startswith("sealed:v1:")

    store = await SQLiteStore.open(tmp_path / "agen.db")
    r = runner(store, load_bundle(folder))
    try:
        ok = await r.run(RunRequest(input="who am I", task_id="t-1"))
        assert ok.status == "succeeded", ok.outcome
        [result] = await tool_results(store, ok.run_id)
        assert result["is_error"] == 0 and result["content"].startswith("client ")

        await server_route(
            "POST", f"{oauth_server}/test/revoke"
        )  # access and refresh tokens stop working
        res = await r.run(RunRequest(input="who am I", task_id="t-2"))
        assert res.status == "succeeded", res.outcome  # the run goes on: the model reads the error
        [failed] = await tool_results(store, res.run_id)
        assert failed["is_error"] == 1
        assert failed["content"] == (
            "remote.whoami was not called: MCP server remote needs a new login: its OAuth access "
            "token expired or was revoked and could not be refreshed; run `agen mcp login remote` "
            "in the bundle's folder, then try again"
        )
        events = await store.all(
            "SELECT run_id, task_id, severity, data FROM events WHERE type = 'mcp.login_needed'"
        )
        assert [(e["run_id"], e["task_id"], e["severity"]) for e in events] == [
            (res.run_id, "t-2", "warning")
        ]
        assert json.loads(events[0]["data"])["server"] == "remote"
    finally:
        await r.close()

    fresh = runner(
        store, load_bundle(folder)
    )  # a new instance cannot even connect: said as clearly
    try:
        with pytest.raises(UnavailableError, match=r"run `agen mcp login remote`"):
            await fresh.run(RunRequest(input="who am I", task_id="t-3"))
    finally:
        await fresh.close()
        await store.close()


async def test_an_expired_access_token_is_refreshed_and_the_new_one_stored_sealed(
    tmp_path: Path, home: Path, oauth_server: str
) -> None:
    folder = bundle_dir(tmp_path, oauth_server)
    login(folder)
    path, data = stored(home)
    await server_route(
        "POST", f"{oauth_server}/test/expire"
    )  # the access token stops working; the refresh one not
    data["expires_at"] = 1.0  # and the login says so, as it would an hour later
    path.write_text(json.dumps(data))

    store = await SQLiteStore.open(tmp_path / "agen.db")
    r = runner(store, load_bundle(folder))
    try:
        res = await r.run(RunRequest(input="who am I", task_id="t-1"))
    finally:
        await r.close()
        await store.close()
    assert res.status == "succeeded", res.outcome
    state = await server_route("GET", f"{oauth_server}/test/state")
    assert state["refreshes"] == 1 and len(state["access"]) == 1
    _, after = stored(home)
    assert after["tokens"] != data["tokens"] and after["expires_at"] > 1.0
    assert state["access"][0] not in path.read_text()


def test_login_refuses_what_it_cannot_log_in_to_in_one_line(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    plain = subprocess.Popen(  # an MCP server that needs no login
        [sys.executable, str(FIXTURES / "mcp_test_server.py"), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        folder = make_bundle(
            tmp_path,
            mcp={
                "mcpServers": {
                    "local": {"command": sys.executable, "args": ["server.py"]},
                    "plain": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"},
                }
            },
        )
        b = str(folder)
        code, _, err = run_agen(capsys, "mcp", "login", "nope", "--bundle", b)
        assert (
            code == 2
            and f'error: {b}/mcp.json mcpServers has no server "nope" (it has: local, plain)' in err
        )
        code, _, err = run_agen(capsys, "mcp", "login", "local", "--bundle", b)
        assert code == 2 and "mcpServers.local is a stdio server; OAuth login is for remote" in err
        code, out, err = run_agen(capsys, "mcp", "login", "plain", "--bundle", b, "--no-browser")
        assert (
            code == 2 and "answered without asking for a login, so there is nothing to store" in err
        )
        assert out == "" and not (home / "mcp-oauth").exists()
        nobody = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
        code, _, err = run_agen(capsys, "mcp", "login", nobody, "--no-browser")
        assert code == 3 and err.startswith(
            f"error: logging in to MCP server 127.0.0.1 ({nobody}) failed: ConnectError"
        )
        assert "Traceback" not in err
    finally:
        plain.terminate()
        plain.wait(timeout=30)
