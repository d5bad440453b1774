"""Loopback ports for the servers tests start.

A port the kernel hands out for ``bind(0)`` comes from its ephemeral range, the same range every
outgoing connection on the machine takes its source port from: between the test closing its probe
socket and the server binding the port, a connection made by another test (xdist runs three at
once) can take it, and the server exits "address in use" (seen once in CI, in the scale-out doc
walkthrough). So ports come from below the ephemeral range, where no outgoing connection lands,
chosen at random and checked free.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000


def _ephemeral_low() -> int:
    try:
        return int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default, and what macOS's 49152 leaves room under too


def free_port() -> int:
    """A loopback port nothing listens on now, outside the kernel's ephemeral range when it can be."""
    high = _ephemeral_low()
    for _ in range(100):
        port = random.randrange(_LOWEST, high) if high > _LOWEST + 1_000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise RuntimeError(f"no free loopback port between {_LOWEST} and {high}")
