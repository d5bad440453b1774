"""`agen run` in a terminal: a live status line while it waits, and Ctrl-C says the task goes on."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import time
from pathlib import Path

from tests.e2e.harness import AGEN, Up
from tests.fleet_helpers import write_bundle


def held_bundle(root: Path, workdir: Path) -> Path:
    """One tool call that runs until the test creates ``release`` in the workspace, then an answer."""
    workdir.mkdir(parents=True, exist_ok=True)
    bundle = write_bundle(
        root,
        "held",
        script=[
            {
                "toolCalls": [
                    {
                        "name": "ws_run",
                        "arguments": {"command": "while [ ! -f release ]; do sleep 0.1; done"},
                    }
                ],
                "usage": {"inputTokens": 1200, "outputTokens": 34, "costUsd": 0.0123},
            },
            {"text": "released"},
        ],
        config={"scale": {"min": 1, "max": 1}, "permissions": {"default": "allow"}},
    )
    server = {"command": AGEN, "args": ["mcp", "workspace", "--root", str(workdir)]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"ws": server}}))
    return bundle


class Terminal:
    """A command on a pseudo-terminal: what it writes, read until some text shows up."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the pty is its controlling terminal (stdin, stdout, stderr)
            # As an interactive shell starts a foreground job: Ctrl-C's signal delivered and handled by
            # default, whatever the test process inherited or set (an ignored or blocked SIGINT survives
            # fork and exec, and a run in the full suite once ignored the test's Ctrl-C).
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            os.execve(argv[0], argv, {**env, "COLUMNS": "160", "TERM": "xterm"})
        self.seen = b""

    def read_until(self, text: str, timeout_s: float = 60) -> str:
        deadline = time.monotonic() + timeout_s
        while text.encode() not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"no {text!r} in the terminal: {self.seen.decode(errors='replace')!r}"
                )
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # the command exited and the pty closed
                    chunk = b""
                if not chunk:
                    raise AssertionError(
                        f"the command ended before {text!r}: {self.seen.decode(errors='replace')!r}"
                    )
                self.seen += chunk
        return self.seen.decode(errors="replace")

    def ctrl_c(self) -> None:
        os.write(self.fd, b"\x03")  # the terminal turns it into SIGINT for the foreground command

    def exit_code(self) -> int:
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def test_run_in_a_terminal_shows_a_live_status_line_and_ctrl_c_says_how_to_follow_up(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    up = Up(tmp_path / "home").start()
    term = None
    try:
        up.agen("deploy", str(held_bundle(tmp_path / "held", work)))
        term = Terminal([AGEN, "run", "held", "go"], up.env)
        screen = term.read_until("tool ws_run")  # the live line: what the run does now
        assert "running" in screen
        term.read_until("1 turn · 1.2k tokens · $0.0123")  # turns, tokens and cost so far
        term.ctrl_c()
        screen = term.read_until("agen cancel")
        task_id = screen.split("goes on in the Hub")[0].split("task ")[-1].strip(" ;")
        assert f"`agen wait {task_id}`" in screen
        assert term.exit_code() == 130

        (work / "release").write_text("")  # the task went on without the command: let it finish
        done = up.json("wait", task_id, "--timeout", "60s")
        assert done["state"] == "succeeded"
    finally:
        if term is not None:
            term.kill()
        up.stop()


def test_run_piped_prints_no_status_line(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    try:
        up.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
        r = up.agen("run", "echo", "hi")
        assert r.stdout == "You said: hi\n" and "\r" not in r.stderr and "tokens" not in r.stderr
    finally:
        up.stop()


def test_down_says_which_runs_it_is_draining(tmp_path: Path) -> None:
    import subprocess

    from tests.e2e.harness import wait_until

    work = tmp_path / "work"
    up = Up(tmp_path / "home").start()
    try:
        up.agen("deploy", str(held_bundle(tmp_path / "held", work)))
        task_id = up.agen("run", "held", "go", "--no-wait").stdout.strip()
        wait_until(
            lambda: (up.json("query", task_id).get("now") or {}).get("doing") == "tool",
            what="the run to be inside its tool call",
        )
        down = subprocess.Popen(
            [AGEN, "down"], env=up.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert down.stderr is not None
        head = down.stderr.readline()
        assert "is draining 1 unfinished run(s):" in head
        assert down.stderr.readline().strip() == f"held: task {task_id} (running, tool ws_run)"
        (work / "release").write_text("")  # the current step ends; the drain can finish
        assert down.wait(60) == 0
    finally:
        up.stop()
