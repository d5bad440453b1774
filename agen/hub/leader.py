"""Hub leadership: one Store row per name with holder, epoch and expiry (seed 000 §5 "Hub leader").

Taking over an expired lease increments the epoch; every leader write (assignments,
desired counts, trigger firings) runs ``check_epoch`` in its own transaction, so a
leader that paused past its lease cannot write after a successor took over.
"""

from __future__ import annotations

from agen.store import Tx

HUB_LEADER = "hub-leader"


def acquire_or_renew(tx: Tx, name: str, holder: str, ttl_ms: int) -> int | None:
    """Become or stay leader until now + ttl: the epoch, or None while someone else's lease is live."""
    raise NotImplementedError


def check_epoch(tx: Tx, name: str, epoch: int) -> None:
    """Raise FencedError unless ``epoch`` is the current, unexpired leadership term of ``name``."""
    raise NotImplementedError


def step_down(tx: Tx, name: str, holder: str) -> bool:
    """Give leadership up at once (shutdown) so another Hub takes over without waiting out the TTL."""
    raise NotImplementedError
