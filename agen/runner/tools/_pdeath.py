"""Launcher for stdio MCP servers: parent-death signal, cleared environment, then exec.

The MCP SDK spawns servers itself (own session/process group, no ``preexec_fn``), so
agen spawns this tiny launcher instead; it asks Linux to SIGKILL it when agen dies
(``PR_SET_PDEATHSIG`` survives ``execve``), drops every environment variable not named
in ``--keep`` (the SDK adds a few defaults of its own) and execs the real server.

Usage: ``python -m agen.runner.tools._pdeath --keep A,B,C [--cpu N] [--mem MB] -- command args...``.
Imports nothing from agen on purpose (it runs once per server start), but agen.sandbox's limits
for a sandboxed server.
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` when our parent exits (Linux only); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def parse(argv: list[str]) -> tuple[list[str], dict[str, int], list[str]]:
    """Split ``--keep A,B [--cpu N] [--mem MB] [--] cmd args`` into (names to keep, limits,
    command line); ``--cpu``/``--mem`` are the sandbox's limits (agen.sandbox.limits.limit_args)."""
    keep: list[str] = []
    limits: dict[str, int] = {}
    rest = list(argv)
    while len(rest) >= 2 and rest[0] in ("--keep", "--cpu", "--mem"):
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--keep":
            keep = [k for k in value.split(",") if k]
        else:
            limits[flag[2:]] = int(value)
    if rest and rest[0] == "--":
        rest = rest[1:]
    if not rest:
        raise SystemExit("agen launcher: no command given (usage: --keep A,B -- command args)")
    return keep, limits, rest


def run(argv: list[str]) -> None:
    """Set the parent-death signal, keep only the named variables, exec the command."""
    keep, limits, command = parse(argv)
    if limits:  # only sandboxed servers have limits: the import is not paid otherwise
        from agen.sandbox.limits import apply_limits
        from agen.sandbox.policy import Limits

        apply_limits(Limits(limits.get("cpu"), limits.get("mem")))
    parent = os.getppid()
    set_parent_death_signal()
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    env = {k: v for k, v in os.environ.items() if k in set(keep)}
    try:
        os.execvpe(command[0], command, env)
    except OSError as e:
        print(f"agen launcher: cannot start MCP server {command[0]!r}: {e}", file=sys.stderr)
        os._exit(127)


if __name__ == "__main__":
    run(sys.argv[1:])
