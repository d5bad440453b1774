"""The one doubling back-off: every retry loop in agen (a model call, a Hub that does not answer, a
notification target that fails, a held provider account, a crashing instance) waits this way."""

from __future__ import annotations

from typing import TypeVar

N = TypeVar("N", int, float)


def next_backoff(last: N, first: N, cap: N) -> N:
    """The wait after one of ``last``: ``first`` when nothing was waited yet (``last`` is 0), then
    twice the last wait, never less than ``first`` nor more than ``cap``."""
    return min(cap, max(first, last * 2))
