"""Run one shell command for the workspace server: own process group, capped output, hard timeout.

On timeout the whole process group gets SIGTERM, then SIGKILL after a grace period,
so nothing the command started outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
OUTPUT_CAP = 30_000
KILL_GRACE_S = 2.0
_DRAIN_AFTER_EXIT_S = 1.0


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


async def kill_group(pgid: int, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after ``grace_s``."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    for _ in range(int(grace_s / 0.05)):
        if not group_alive(pgid):
            return
        await asyncio.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def run_command(command: str, cwd: str, timeout_s: float, cap: int = OUTPUT_CAP) -> RunResult:
    """Run ``command`` with ``sh -c`` in ``cwd``; stdout and stderr together, capped."""
    proc = await asyncio.create_subprocess_shell(
        command,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    out = _Capped(cap)
    assert proc.stdout is not None
    stdout = proc.stdout

    async def pump() -> None:
        while chunk := await stdout.read(65536):
            out.add(chunk)

    reader = asyncio.create_task(pump())
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout=timeout_s)
    except TimeoutError:
        timed_out = True
        await kill_group(proc.pid)
        await proc.wait()
    except asyncio.CancelledError:
        await kill_group(proc.pid, grace_s=0.5)
        raise
    # Background children may keep the pipe open; read what is there, then stop waiting.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(reader), timeout=_DRAIN_AFTER_EXIT_S)
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader
    text, dropped = out.text()
    return RunResult(None if timed_out else proc.returncode, text, timed_out, dropped)
