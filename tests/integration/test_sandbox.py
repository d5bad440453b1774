"""The OS sandbox (bubblewrap) around run commands and stdio MCP servers: what a command can read,
write, start and reach, proved by trying from inside; and the refusal where bubblewrap is missing.

The confinement is the kernel's (the sandbox's mount view and namespaces), so each escape is tried
for real: ``..``, absolute paths, symlinks, hardlinks and a folder swapped for a symlink in a race.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agen.bundle import load_bundle_files
from agen.errors import UnavailableError
from agen.mcpservers.workspace_tools import TOOL_NAMES
from agen.runner.sandboxing import EgressEvents, EventOrigin, Sandboxing
from agen.runner.tooling import build_tooling
from agen.runner.tools.base import ToolError
from agen.runner.tools.workspace import WorkspaceToolset
from agen.sandbox.bwrap import runtime_paths
from agen.sandbox.policy import Limits, Policy
from agen.store import SQLiteStore
from tests.integration.mcp_helpers import TEST_SERVER, ctx, eventually
from tests.sandbox_helpers import bwrap_or_skip
from tests.unit.bundle_helpers import bundle_files

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bwrap() -> str:
    return bwrap_or_skip()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws" / "task"
    path.mkdir(parents=True)
    return path


async def sh(
    workspace: Path,
    command: str,
    policy: Policy | None = None,
    *,
    timeout_s: float = 60,
    events: EgressEvents | None = None,
) -> str:
    """Run ``command`` with the built-in run tool in a sandbox of ``policy``; its rendered result."""
    box = Sandboxing(policy or Policy(), "the test's run tool", events)
    tools = WorkspaceToolset(str(workspace), TOOL_NAMES, None, box)
    run = {t.name: t for t in await tools.start()}["workspace.run"]
    try:
        result = await run.call({"command": command, "timeout_seconds": timeout_s}, ctx())
        return result.content
    finally:
        await tools.close()


async def test_a_command_reads_only_the_system_the_workspace_and_the_granted_paths(
    tmp_path: Path, ws: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    granted = tmp_path / "granted"
    granted.mkdir()
    (granted / "note.txt").write_text("granted note")
    (ws / "mine.txt").write_text("in the workspace")
    out = await sh(
        ws,
        f"cat {outside}/secret.txt; cat {granted}/note.txt; echo; cat mine.txt; echo; "
        'echo "home: $(ls -A "$HOME" | wc -l)"; echo "shadow: $(cat /etc/shadow | wc -c)"; '
        "grep NoNewPrivs /proc/self/status; ls /sys 2>&1 | wc -l",
        Policy(read=(str(granted),)),
    )
    assert "top secret" not in out
    assert f"{outside}/secret.txt: No such file or directory" in out
    assert "granted note" in out and "in the workspace" in out
    assert "home: 0" in out  # $HOME is an empty tmpfs
    assert "shadow: 0" in out  # /etc/shadow is /dev/null
    assert "NoNewPrivs:\t1" in out
    assert out.endswith("[exit code 0]"), out


async def test_a_command_writes_nothing_outside_the_workspace(tmp_path: Path, ws: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    granted = tmp_path / "granted"
    granted.mkdir()
    (granted / "note.txt").write_text("unchanged")
    attempts = [
        "echo x > ../escape-dotdot.txt",
        f"echo x > {tmp_path}/escape-absolute.txt",
        f"ln -s {outside} hidden-link && echo x > hidden-link/via-symlink.txt",
        f"ln -s {granted} ro-link && echo x > ro-link/via-symlink.txt",
        f"ln {granted}/note.txt hard && echo x >> hard",
        f"echo x >> {granted}/note.txt",
        "echo inside > inside.txt",
    ]
    out = await sh(ws, "; ".join(f"({a}) 2>&1" for a in attempts), Policy(read=(str(granted),)))
    assert "Read-only file system" in out, out
    assert "Invalid cross-device link" in out, out  # a hardlink across the mount is refused
    assert not (ws.parent / "escape-dotdot.txt").exists()
    assert not (tmp_path / "escape-absolute.txt").exists()
    assert list(outside.iterdir()) == [] and sorted(p.name for p in granted.iterdir()) == [
        "note.txt"
    ]
    assert (granted / "note.txt").read_text() == "unchanged"
    assert (ws / "inside.txt").read_text() == "inside\n"  # the workspace itself is writable


async def test_a_folder_swapped_for_a_symlink_in_a_race_sends_no_write_outside(
    tmp_path: Path, ws: Path
) -> None:
    """The host swaps ws/d between a folder and a symlink to a host folder as fast as it can while
    the command writes into ws/d; inside, the symlink leads into the sandbox's own view, where that
    host folder does not exist, so no write can land there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    stop = threading.Event()
    swaps = 0

    def swap() -> None:
        nonlocal swaps
        d = ws / "d"
        while not stop.is_set():
            try:
                if d.is_symlink():
                    d.unlink()
                    d.mkdir()
                else:
                    if d.is_dir():
                        for f in d.iterdir():
                            f.unlink()
                        d.rmdir()
                    d.symlink_to(outside)
                swaps += 1
            except OSError:
                continue

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        out = await sh(
            ws,
            "i=0; while [ $i -lt 2000 ]; do echo x 2>/dev/null > d/race.txt; i=$((i+1)); done; "
            f"ln -sfn {outside} e; j=0; while [ $j -lt 200 ]; do rm -f e; mkdir -p e; rmdir e; "
            f"ln -s {outside} e; echo x 2>/dev/null > e/race2.txt; j=$((j+1)); done; echo done",
        )
    finally:
        stop.set()
        swapper.join()
    assert "done" in out and swaps > 0
    assert list(outside.iterdir()) == []


def running_with_arg(marker: str) -> list[int]:
    """Host pids whose command line has ``marker`` as an argument (zombies excluded)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in argv and state != "Z":
            found.append(int(name))
    return found


async def test_nothing_a_command_starts_outlives_it(ws: Path) -> None:
    out = await sh(
        ws,
        "sleep 4242.5 & setsid sleep 4242.5 & (nohup sleep 4242.5 >/dev/null 2>&1 &); "
        "echo procs: $(ls /proc | grep -c '^[0-9]')",
    )
    assert out.endswith("[exit code 0]")
    assert int(out.split("procs: ")[1].split()[0]) >= 4  # they did start, in the sandbox
    assert await eventually(lambda: not running_with_arg("4242.5"))
    timed = await sh(ws, "sleep 4343.5 & setsid sleep 4343.5 & sleep 300", timeout_s=1)
    assert timed.startswith("[timed out after 1s")
    assert await eventually(lambda: not running_with_arg("4343.5"))


async def test_limits_stop_a_process_that_takes_too_much_memory_or_cpu(ws: Path) -> None:
    py = sys.executable
    policy = Policy(read=runtime_paths(), limits=Limits(cpu_seconds=1, memory_mb=256))
    out = await sh(
        ws,
        f"{py} -c 'bytearray(512 * 2**20)' 2>&1 | tail -1; "
        f"{py} -c 'bytearray(64 * 2**20); print(\"small ok\")'; "
        f"{py} -c 'while True: pass'; echo cpu: $?",
        policy,
    )
    assert "MemoryError" in out and "small ok" in out
    assert "cpu: 152" in out  # 128 + SIGXCPU


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from the host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def host_server() -> Iterator[int]:
    """An HTTP server on the host's 127.0.0.1 (the one the sandbox must not reach unless allowed)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


PROBE = """
import socket, sys, urllib.error, urllib.request
url = sys.argv[1]
try:
    print("fetched:", urllib.request.urlopen(url, timeout=10).read().decode())
except urllib.error.HTTPError as e:
    print("refused:", e.code, e.read().decode().strip())
except OSError as e:
    print("failed:", type(e).__name__)
"""

DIRECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    print("direct: connected")
except OSError as e:
    print("direct:", type(e).__name__)
"""


async def test_network_is_only_the_allowed_hosts_through_the_proxy_and_each_decision_is_an_event(
    tmp_path: Path, ws: Path, host_server: int
) -> None:
    (ws / "probe.py").write_text(PROBE)
    (ws / "direct.py").write_text(DIRECT)
    py, port = sys.executable, host_server
    store = await SQLiteStore.open(tmp_path / "agen.db")
    try:
        events = EgressEvents(
            store, EventOrigin("default", "dep", "task-1", "run-1"), "workspace.run"
        )
        out = await sh(
            ws,
            f"{py} probe.py http://localhost:{port}/; {py} probe.py http://127.0.0.1:{port}/; "
            f"{py} direct.py {port}",
            Policy(allow=("localhost",)),
            events=events,
        )
        assert "fetched: hello from the host" in out  # allowed, through the proxy
        assert "refused: 403 agen sandbox: 127.0.0.1 is not in the sandbox's network.allow" in out
        assert "direct: ConnectionRefusedError" in out  # no route around the proxy
        rows = await store.all(
            "SELECT type, severity, run_id, data FROM events WHERE type LIKE 'sandbox.%' ORDER BY seq"
        )
    finally:
        await store.close()
    decisions = [(r["type"], r["severity"], json.loads(r["data"])) for r in rows]
    egress = [d for t, _, d in decisions if t == "sandbox.egress"]
    assert [(d["host"], d["allowed"]) for d in egress] == [
        ("localhost", True),
        ("127.0.0.1", False),
    ]
    assert (
        decisions[1][1] == "warning" and "not in the sandbox's network.allow" in egress[1]["reason"]
    )
    traffic = [d for t, _, d in decisions if t == "sandbox.traffic"]
    assert traffic[0]["allowed"] == 1 and traffic[0]["denied"] == 1
    assert traffic[0]["bytes_in"] > len("hello from the host")
    assert all(r["run_id"] == "run-1" for r in rows)


async def test_without_allowed_hosts_a_command_has_no_network_at_all(
    ws: Path, host_server: int
) -> None:
    (ws / "direct.py").write_text(DIRECT)
    out = await sh(
        ws,
        f'echo "proxy: ${{HTTP_PROXY:-none}}"; {sys.executable} direct.py {host_server}',
        Policy(read=runtime_paths()),
    )
    assert "proxy: none" in out and "direct: ConnectionRefusedError" in out


async def test_a_stdio_server_sees_only_the_variables_granted_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRANTED_TO_T", "for t")
    monkeypatch.setenv("NOT_GRANTED", "for nobody")
    monkeypatch.setenv("TOKEN_VALUE", "s3cret-token-value")
    fixtures = str(Path(TEST_SERVER).parent)
    server = {"command": sys.executable, "args": [TEST_SERVER]}
    b = load_bundle_files(
        bundle_files(
            mcp={
                "mcpServers": {
                    "t": {**server, "env": {"TOKEN": "${API_TOKEN}"}},
                    "u": server,
                }
            },
            secrets={"secrets": {"API_TOKEN": {"env": "TOKEN_VALUE"}}},
            harness={
                "provider": "fake",
                "sandbox": {
                    "filesystem": {"read": [fixtures]},
                    "servers": {"t": {"env": ["GRANTED_TO_T"]}},
                },
            },
        )
    )
    store = await SQLiteStore.open(tmp_path / "agen.db")
    tooling = build_tooling(b, store, environ=dict(os.environ))
    try:
        seen = {}
        for ts in tooling.toolsets:
            tools = {t.name: t for t in await ts.start()}
            name = ts.label
            seen[name] = set((await tools[f"{name}.env_names"].call({}, ctx())).content.split(","))
            seen[name + ".pid"] = {(await tools[f"{name}.pid"].call({}, ctx())).content}
        base = {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "PWD"}  # bwrap sets PWD
        assert seen["t"] - base == {"GRANTED_TO_T", "TOKEN"}
        assert seen["u"] - base == set()
        assert seen["t.pid"] == seen["u.pid"] == {"1"}  # each is PID 1 of its own PID namespace
    finally:
        for ts in tooling.toolsets:
            await ts.close()
        await store.close()


async def test_without_bubblewrap_the_sandbox_refuses_to_start_and_never_runs_unconfined(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ToolError) as refused:  # the model reads why; nothing ran
        await sh(ws, "touch ran.txt")
    assert (
        "the test's run tool runs in the sandbox, which cannot start here" in refused.value.message
    )
    assert "sudo apt-get install bubblewrap" in refused.value.message
    assert '"sandbox": {"enabled": false}' in refused.value.message
    assert not (ws / "ran.txt").exists()
    server = Sandboxing(Policy(), "mcp.json server 't'")
    with pytest.raises(UnavailableError, match="bubblewrap"):  # a server does not start at all
        await server.prepare()


def agen_cli(args: list[str], path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    return subprocess.run(
        [sys.executable, "-m", "agen", *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("command", [["deploy", "--validate"], ["deploy"], ["run"]])
def test_a_bundle_that_needs_the_sandbox_is_refused_where_bubblewrap_is_missing(
    tmp_path: Path, command: list[str]
) -> None:
    root = tmp_path / "bundle"
    for path, data in bundle_files(harness={"provider": "fake"}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    empty = str(tmp_path / "empty")
    extra = ["hi"] if command == ["run"] else []
    done = agen_cli([*command, str(root), *extra], empty)
    assert done.returncode == 2, done
    assert (
        "the built-in workspace run tool runs in the sandbox, which cannot start here"
        in done.stderr
    )
    assert (
        "sudo apt-get install bubblewrap" in done.stderr
        and "sudo dnf install bubblewrap" in done.stderr
    )
    harness = {"provider": "fake", "sandbox": {"enabled": False}}
    (root / "x-agen/harness.json").write_text(json.dumps(harness))
    opted_out = agen_cli(["deploy", "--validate", str(root)], empty)
    assert opted_out.returncode == 0, opted_out
    assert (
        "sandbox.enabled: false runs the workspace run tool and stdio MCP servers unconfined"
        in (opted_out.stderr)
    )


async def test_the_workspace_server_of_a_run_is_sandboxed_and_leaves_nothing_running_after_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agen mcp workspace --root ${WORKSPACE}` in mcp.json: the whole server runs in the sandbox,
    so its run commands write only the run's folder, and what they leave running in the background
    ends when the run ends and the server with it."""
    from agen.runner.loop import Runner
    from agen.runner.types import RunRequest

    monkeypatch.setenv("AGEN_WORKSPACE_ROOT", str(tmp_path / "workspaces"))
    outside = tmp_path / "outside"
    outside.mkdir()
    command = (
        f"echo x > ../escape.txt; echo x > {outside}/abs.txt; (sleep 4646.5 &); "
        "echo inside > inside.txt; echo started"
    )
    turns = [
        {"toolCalls": [{"name": "ws_run", "arguments": {"command": command}}]},
        {"text": "done"},
    ]
    b = load_bundle_files(
        bundle_files(
            mcp={
                "mcpServers": {
                    "ws": {
                        "command": "agen",
                        "args": ["mcp", "workspace", "--root", "${WORKSPACE}"],
                    }
                }
            },
            harness={"provider": "fake", "fake": {"script": turns}},
            config={
                "kind": "pool",
                "permissions": {"default": "allow"},
                "workspace": {"mode": "per_task", "retain": True},
            },
        )
    )
    store = await SQLiteStore.open(tmp_path / "agen.db")
    t = build_tooling(b, store, deployment="dep")
    r = Runner(
        store,
        b,
        owner="test",
        toolsets=t.toolsets,
        policy=t.policy,
        redactor=t.redactor,
        extras=t.extras,
    )
    try:
        res = await r.run(RunRequest(input="go", deployment="dep", task_id="t-1"))
        rows = await store.all(
            "SELECT content FROM messages WHERE run_id = ? AND role = 'tool'", (res.run_id,)
        )
    finally:
        await r.close()
        await store.close()
    assert "started" in rows[0]["content"], rows
    task = tmp_path / "workspaces" / "default" / "dep" / "tasks" / "t-1"
    assert (task / "inside.txt").read_text() == "inside\n"
    assert not (task.parent / "escape.txt").exists() and list(outside.iterdir()) == []
    assert await eventually(lambda: not running_with_arg("4646.5"))
