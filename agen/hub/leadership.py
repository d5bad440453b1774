"""Hub leadership: one Store row per name with holder, epoch and expiry (seed 000 §5 "Hub leader").

Taking over an expired lease increments the epoch; every leader write (assignments,
desired counts, trigger firings) runs ``check_epoch`` in its own transaction, so a
leader that paused past its lease cannot write after a successor took over. On SQLite
the single writer serialises these transactions; on Postgres, where Hubs commit side by side,
check_epoch reads the row ``FOR SHARE`` so a takeover waits for the leader's transaction to
end, and acquire_or_renew locks it ``FOR UPDATE`` (two Hubs never both take one term).

A holder that wants to believe it leads must count its term from a clock reading taken
*before* calling acquire_or_renew: the row's expiry is at least that plus the TTL, and no
other Hub can take over before the row's expiry.
"""

from __future__ import annotations

from typing import NamedTuple

from agen.errors import FencedError, InvalidError
from agen.store import Tx

HUB_LEADER = "hub-leader"
SYSTEM_NAMESPACE = "system"


class _Lease(NamedTuple):
    """A leadership lease as stored (``leases``): who holds which term until when."""

    holder: str
    epoch: int
    expires_ms: int


_LEASE_SQL = "SELECT holder, epoch, expires_ms FROM leases WHERE name = ?"


def acquire_or_renew(tx: Tx, name: str, holder: str, ttl_ms: int) -> int | None:
    """Become or stay leader until now + ttl: the epoch, or None while someone else's lease is live.

    Renewing a live lease keeps the epoch; any takeover of an expired lease (even by the
    same holder, whose term lapsed) starts a new epoch.
    """
    if ttl_ms <= 0:
        raise InvalidError(f"leader ttl must be positive (got {ttl_ms} ms)", field="ttl_ms")
    now = tx.now_ms
    lock = " FOR UPDATE" if tx.dialect == "postgres" else ""  # Hubs commit side by side there
    row = tx.row(_Lease, _LEASE_SQL + lock, (name,))
    if row is None:
        if tx.execute(
            "INSERT INTO leases (name, holder, epoch, expires_ms) VALUES (?, ?, 1, ?)"
            " ON CONFLICT (name) DO NOTHING",
            (name, holder, now + ttl_ms),
        ):
            _elected(tx, name, holder, 1, None)
            return 1
        # another Hub's first lease committed meanwhile (Postgres): decide from its row
        row = tx.row(_Lease, _LEASE_SQL + lock, (name,))
        assert row is not None
    epoch = row.epoch
    if row.expires_ms > now:
        if row.holder != holder:
            return None
        tx.execute(
            "UPDATE leases SET expires_ms = ? WHERE name = ? AND epoch = ?",
            (now + ttl_ms, name, epoch),
        )
        return epoch
    epoch += 1
    tx.execute(
        "UPDATE leases SET holder = ?, epoch = ?, expires_ms = ? WHERE name = ?",
        (holder, epoch, now + ttl_ms, name),
    )
    _elected(tx, name, holder, epoch, row.holder)
    return epoch


def _elected(tx: Tx, name: str, holder: str, epoch: int, previous: str | None) -> None:
    tx.event(
        SYSTEM_NAMESPACE,
        "leader.elected",
        data={"lease": name, "holder": holder, "epoch": epoch, "previous": previous},
    )


def check_epoch(tx: Tx, name: str, epoch: int) -> None:
    """Raise FencedError unless ``epoch`` is the current, unexpired leadership term of ``name``."""
    share = (
        " FOR SHARE" if tx.dialect == "postgres" else ""
    )  # a takeover waits for this write to end
    row = tx.row(_Lease, _LEASE_SQL + share, (name,))
    if row is None or row.epoch != epoch or row.expires_ms <= tx.now_ms:
        now = (
            "nobody leads"
            if row is None
            else (
                f"epoch {row.epoch} held by {row.holder}"
                + (" (expired)" if row.expires_ms <= tx.now_ms else "")
            )
        )
        raise FencedError(
            f"leader epoch {epoch} of {name!r} is no longer current ({now}); this Hub lost leadership "
            "and its scheduler write was refused — it will retry once it leads again",
            lease=name,
            epoch=epoch,
        )


def step_down(tx: Tx, name: str, holder: str) -> bool:
    """Give leadership up at once (shutdown) so another Hub takes over without waiting out the TTL."""
    return (
        tx.execute("UPDATE leases SET expires_ms = 0 WHERE name = ? AND holder = ?", (name, holder))
        > 0
    )
