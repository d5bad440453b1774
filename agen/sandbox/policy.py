"""What a sandboxed process may touch: a typed policy, and the one host-allowlist rule.

``host_allowed`` is the only place a host is matched against ``network.allow``: the egress proxy
and the ``fetch`` tool both call it. A pattern is a host name (``api.github.com``, matched
exactly, case-insensitive) or ``*.`` and a suffix (``*.pypi.org``: any host under pypi.org, not
pypi.org itself). An IP address is a host name like any other: it matches only itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
HOST_PATTERN = re.compile(rf"^(\*\.)?{_LABEL}(\.{_LABEL})*$|^\d{{1,3}}(\.\d{{1,3}}){{3}}$")
"""An allowlist entry: a host name, ``*.`` + a domain, or an IPv4 address (lower case)."""


def valid_host_pattern(pattern: str) -> bool:
    return bool(HOST_PATTERN.match(pattern.lower()))


def host_allowed(host: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """True when ``host`` matches one of ``patterns`` (exact, or ``*.suffix`` for its subdomains)."""
    host = host.lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    for pattern in patterns:
        p = pattern.lower()
        if p.startswith("*."):
            if host.endswith(p[1:]) and len(host) > len(p) - 1:
                return True
        elif host == p:
            return True
    return False


@dataclass(frozen=True)
class Limits:
    """Resource limits set on the sandbox's processes (setrlimit; each process has its own)."""

    cpu_seconds: int | None = None
    """RLIMIT_CPU: CPU seconds a process may use (SIGXCPU, then SIGKILL a second later)."""
    memory_mb: int | None = None
    """RLIMIT_AS: the address space a process may map, in MiB (allocations beyond it fail)."""


@dataclass(frozen=True)
class Policy:
    """One sandbox: what it reads and writes besides the system, which hosts it reaches, its limits.

    Paths are absolute (``~`` already expanded). The workspace a command runs in is given
    separately (bwrap.Launch), always writable."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    limits: Limits = Limits()

    @property
    def network(self) -> bool:
        """Whether the sandbox gets the egress proxy (some host is allowed)."""
        return bool(self.allow)
