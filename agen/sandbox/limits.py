"""Apply a sandbox's resource limits to the current process (inherited by what it execs)."""

from __future__ import annotations

import resource

from agen.sandbox.policy import Limits


def apply_limits(limits: Limits) -> None:
    """setrlimit RLIMIT_CPU and RLIMIT_AS; called in the child before it execs bubblewrap."""
    if limits.cpu_seconds is not None:
        # soft at the limit (SIGXCPU), hard one second later (SIGKILL): a process that ignores
        # SIGXCPU still stops
        n = limits.cpu_seconds
        resource.setrlimit(resource.RLIMIT_CPU, (n, n + 1))
    if limits.memory_mb is not None:
        size = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))


def limit_args(limits: Limits) -> list[str]:
    """The launcher's options for ``limits`` (agen/runner/tools/_pdeath.py reads them back)."""
    out: list[str] = []
    if limits.cpu_seconds is not None:
        out += ["--cpu", str(limits.cpu_seconds)]
    if limits.memory_mb is not None:
        out += ["--mem", str(limits.memory_mb)]
    return out
