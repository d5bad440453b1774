"""Run one shell command for the workspace server, and make sure nothing it starts outlives it.

Each command runs with ``sh -c`` in its own session (so in its own process group) and
with ``AGEN_RUN_MARK=<scope>:<n>`` in its environment. The scope is the server's token in
``agen mcp workspace``; the Runner's built-in toolset gives each run its own scope, so that
run's end stops what its commands left running (``stop_scope``). A process that leaves the
group (``setsid``, a double fork) still inherits that variable, so "everything this
command started" is: the group, plus every process whose environment carries the mark
(read from ``/proc/<pid>/environ``; Linux). On timeout all of them get SIGTERM, then
SIGKILL after a grace period; when the server exits (stdin closed, SIGTERM, SIGHUP)
every process carrying the server's token gets SIGKILL. What escapes: a process that
both leaves the group and clears its environment, or anything left behind when the
server itself is SIGKILLed (e.g. agen died and the parent-death signal fired).

The call returns when the shell exits: output goes through a pipe that is read while
the shell runs; at its exit what is buffered is taken and the rest is discarded in the
background, so a child left running in the background does not hold the call open.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
OUTPUT_CAP = 30_000
KILL_GRACE_S = 2.0
MARK_VAR = "AGEN_RUN_MARK"
SERVER_SCOPE = secrets.token_hex(8)
"""The scope of every command of this process unless a caller gives its own (new_scope)."""
_numbers = itertools.count(1)
_scope_tag = [secrets.token_hex(8)]  # new_scope's prefix, drawn again in a forked child
_scopes = itertools.count(1)
os.register_at_fork(after_in_child=lambda: _scope_tag.__setitem__(0, secrets.token_hex(8)))
_groups: dict[str, set[int]] = {}  # per scope: groups of commands that may still have members
_READ_CHUNK = 65536


@dataclass
class RunResult:
    exit_code: int | None
    output: str
    timed_out: bool
    truncated: int  # characters left out of the middle

    def render(self, command: str, timeout_s: float) -> str:
        parts = [self.output.rstrip("\n")] if self.output.strip() else []
        if self.truncated:
            parts.append(f"[output truncated: {self.truncated} characters left out of the middle]")
        if self.timed_out:
            parts.append(
                f"[timed out after {timeout_s:g}s: the command and every process it started were "
                "stopped (SIGTERM, then SIGKILL)]"
            )
        else:
            parts.append(f"[exit code {self.exit_code}]")
        return "\n".join(parts)


class _Capped:
    """Keeps the head and tail of a stream, counting what falls out of the middle."""

    def __init__(self, cap: int) -> None:
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        if len(self.tail) > self.half:
            cut = len(self.tail) - self.half
            self.dropped += cut
            del self.tail[:cut]

    def text(self) -> tuple[str, int]:
        if not self.dropped:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace"), 0
        return (
            self.head.decode("utf-8", "replace") + "\n…\n" + self.tail.decode("utf-8", "replace"),
            self.dropped,
        )


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def marked_pids(mark: str) -> list[int]:
    """Processes whose environment has ``AGEN_RUN_MARK=<mark>`` (or, for a mark ending in ``:``, any
    value starting with it: every command of this server)."""
    if not sys.platform.startswith("linux"):
        return []
    needle = b"\0" + f"{MARK_VAR}={mark}".encode() + (b"" if mark.endswith(":") else b"\0")
    me = os.getpid()
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if needle in b"\0" + environ + b"\0":
            found.append(int(name))
    return found


def _signal_all(prefix: str, groups: set[int], sig: int) -> bool:
    """Send ``sig`` to the groups and the marked processes; True if any was there to get it."""
    hit = False
    for pgid in list(groups):
        try:
            os.killpg(pgid, sig)
            hit = True
        except ProcessLookupError:
            groups.discard(pgid)
        except PermissionError:
            pass
    for pid in marked_pids(prefix):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
            hit = True
    return hit


def _alive(prefix: str, groups: set[int]) -> bool:
    return any(group_alive(g) for g in groups) or bool(marked_pids(prefix))


async def stop_command(mark: str, pgid: int, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM everything the command started, then SIGKILL what is left after ``grace_s``."""
    groups = {pgid}
    _signal_all(mark, groups, signal.SIGTERM)
    for _ in range(int(grace_s / 0.05)):
        if not _alive(mark, groups):
            break
        await asyncio.sleep(0.05)
    for _ in range(
        10
    ):  # a process may fork while it is being killed: look again until none is left
        if not _signal_all(mark, groups, signal.SIGKILL):
            break
        await asyncio.sleep(0.02)
    for groups in _groups.values():
        groups.discard(pgid)


def new_scope() -> str:
    """A scope of its own for a group of commands (one run's), for ``stop_scope``: this process's
    random tag and a counter, not fresh random bytes per run (a getrandom() syscall per run gave up
    the GIL, and getting it back from a busy thread cost more than the rest of making a run's tools)."""
    return f"{_scope_tag[0]}-{next(_scopes)}"


def scope_started(scope: str) -> bool:
    """Whether a command of ``scope`` was started (so ``stop_scope`` may have something to stop)."""
    return scope in _groups


def stop_scope(scope: str) -> None:
    """SIGKILL every process a command of ``scope`` started that is still there. A scope that never
    started a command has nothing to stop, and returns without reading every process's environment
    (which cost a run of the built-in workspace tools ~3 ms, most of a fake-model task's time)."""
    if scope not in _groups:
        return
    groups = _groups[scope]
    for _ in range(10):
        if not _signal_all(f"{scope}:", groups, signal.SIGKILL):
            break
    if not any(group_alive(g) for g in groups):
        _groups.pop(scope, None)


def stop_everything() -> None:
    """SIGKILL every process any command of this server started (called as the server exits)."""
    stop_scope(SERVER_SCOPE)


def stop_everything_on_exit() -> None:
    """Run stop_everything when the server is told to stop (SIGTERM, SIGHUP), then die of that signal."""

    def handler(sig: int, _frame: object) -> None:
        stop_everything()
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


class _PipeReader:
    """Reads the command's output pipe on the event loop; after ``finish`` it only discards."""

    def __init__(self, fd: int, out: _Capped) -> None:
        os.set_blocking(fd, False)
        self.fd = fd
        self.out: _Capped | None = out
        self.loop = asyncio.get_running_loop()
        self.open = True
        self.loop.add_reader(fd, self._read, 16)

    def _read(self, max_chunks: int) -> None:
        for _ in range(max_chunks):
            try:
                chunk = os.read(self.fd, _READ_CHUNK)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._close()
                return
            if self.out is not None:
                self.out.add(chunk)

    def finish(self) -> None:
        """Take what is in the pipe now (all the exited shell wrote), then stop collecting."""
        if self.open:
            self._read(64)
        self.out = None

    def _close(self) -> None:
        if self.open:
            self.open = False
            self.loop.remove_reader(self.fd)
            os.close(self.fd)


async def run_command(
    command: str,
    cwd: str,
    timeout_s: float,
    cap: int = OUTPUT_CAP,
    *,
    scope: str = SERVER_SCOPE,
    env: Mapping[str, str] | None = None,
    wrap: Callable[[list[str]], list[str]] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> RunResult:
    """Run ``command`` with ``sh -c`` in ``cwd``; stdout and stderr together, capped; returns at the
    shell's exit. ``env`` is its environment (default: this process's), plus the scope's mark.
    ``wrap`` turns the ``sh -c`` command line into the one started (the sandbox's bwrap line);
    ``preexec_fn`` runs in the child before it execs (the sandbox's resource limits)."""
    mark = f"{scope}:{next(_numbers)}"
    argv = ["/bin/sh", "-c", command]
    if wrap is not None:
        argv = wrap(argv)
    read_fd, write_fd = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            preexec_fn=preexec_fn,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            start_new_session=True,
            env={**(os.environ if env is None else env), MARK_VAR: mark},
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    groups = _groups.setdefault(scope, set())
    groups.add(proc.pid)
    out = _Capped(cap)
    reader = _PipeReader(read_fd, out)
    timed_out = False
    try:  # no pipe of asyncio's own, so wait() returns at the shell's exit, not when its children close stdout
        await asyncio.wait_for(proc.wait(), timeout=timeout_s)
    except TimeoutError:
        timed_out = True
        await stop_command(mark, proc.pid)
        await proc.wait()
    except asyncio.CancelledError:
        await stop_command(mark, proc.pid, grace_s=0.5)
        raise
    finally:
        reader.finish()
    if not group_alive(proc.pid):
        groups.discard(proc.pid)
    text, dropped = out.text()
    return RunResult(None if timed_out else proc.returncode, text, timed_out, dropped)
