"""ULIDs, agen's ids: 48 bits of milliseconds and 80 random bits as 26 characters of Crockford's base32.

``CROCKFORD`` is the one copy of the alphabet: the generator here writes it, agen.otel.ids reads it
back (an id as an OpenTelemetry trace or span id).
"""

from __future__ import annotations

import os
import random
import threading
import time

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
"""Crockford's base32 alphabet, upper case (no I, L, O, U), as ULIDs are written."""
_PAIRS = [a + b for a in CROCKFORD for b in CROCKFORD]  # 10 bits -> 2 chars
_RAND_MAX = (1 << 80) - 1
_ULID_RANDOM = random.Random(
    os.urandom(32)
)  # private: a program's random.seed() must not make ids repeat
os.register_at_fork(after_in_child=lambda: _ULID_RANDOM.seed(os.urandom(32)))
_random_bits = _ULID_RANDOM.getrandbits


class _UlidClock(threading.local):
    """Monotonic ULIDs like python-ulid's ``str(ULID())`` (same ms: randomness + 1), ~4x cheaper: the
    writer makes a dozen per task. State is per thread, not behind a lock: a lock held by a thread that
    loses the GIL mid-call stalls the other thread for a whole switch interval. Ids from different
    threads in the same millisecond draw their own 80 random bits (unique; order between them is random).
    The bits come from ``random`` (seeded from os.urandom), not a getrandom() syscall per millisecond: a
    syscall gives up the GIL, and getting it back from a busy thread cost ~0.3 ms. Ids need uniqueness,
    not secrecy; tokens and secrets use ``secrets``."""

    def __init__(self) -> None:
        self.last_ms = -1
        self.last_rand = 0
        self.prefix = ""
        self.head = (
            ""  # prefix + the encoding of the random bits above the low 20 (they rarely change)
        )

    def new(self) -> str:
        ms = time.time_ns() // 1_000_000
        if ms <= self.last_ms and self.last_rand < _RAND_MAX:
            r = self.last_rand = self.last_rand + 1
            if not r & 0xFFFFF:  # the increment carried into the cached high bits
                self.head = self._head(r)
        else:
            r = self.last_rand = _random_bits(80)
            self.last_ms = ms
            # 48-bit time: 10 chars (the top one holds 3 bits), two at a time where it can
            p = _PAIRS
            self.prefix = (
                CROCKFORD[ms >> 45]
                + p[(ms >> 35) & 1023]
                + p[(ms >> 25) & 1023]
                + p[(ms >> 15) & 1023]
                + p[(ms >> 5) & 1023]
                + CROCKFORD[ms & 31]
            )
            self.head = self._head(r)
        p = _PAIRS
        return self.head + p[(r >> 10) & 1023] + p[r & 1023]

    def _head(self, r: int) -> str:
        p = _PAIRS
        return (
            self.prefix
            + p[r >> 70]
            + p[(r >> 60) & 1023]
            + p[(r >> 50) & 1023]
            + p[(r >> 40) & 1023]
            + p[(r >> 30) & 1023]
            + p[(r >> 20) & 1023]
        )


_ULIDS = _UlidClock()


def new_ulid() -> str:
    """A new ULID string (monotonic within each thread): the one id source of agen (python-ulid is
    used only to parse and convert ids, in otel/ids.py; this is ~6x cheaper than ``str(ULID())``)."""
    return _ULIDS.new()
