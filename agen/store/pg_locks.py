"""Key locks: how a Postgres write makes a decision from rows it does not change, without a fleet-wide lock.

Write transactions on Postgres run side by side (READ COMMITTED). A write that changes rows locks them
(``UPDATE``, ``FOR UPDATE SKIP LOCKED``, ``ON CONFLICT``), which covers most decisions. A few decide from
rows they do not lock: whether a conversation's head is free, whether a named lock is held, whether an
idempotency key was seen, how many tasks are queued, how much of a budget is spent, whether a provider's probe
is out. Such a decision takes a lock on its *key* first (``lock_keys``): two transactions deciding about
the same key take turns, every other transaction runs on. Each statement after the lock reads what was
committed when it began, so it sees the decision of the transaction that held the key before.

Kept apart from agen.store.postgres (which needs psycopg, an optional extra) so hub code can use it. Nothing
on SQLite, whose one writer already decides one transaction at a time.
"""

from __future__ import annotations

from agen.store.base import Tx

_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))"


def lock_keys(tx: Tx, *keys: str) -> None:
    """Hold a transaction-level lock on each key (a text such as ``conversation:<dep>:<key>``) until this
    transaction ends, waiting for any transaction that holds one. Keys are taken in sorted order, so two
    transactions wanting the same keys never wait on each other in a cycle."""
    if tx.dialect != "postgres":
        return
    for key in sorted(set(keys)):
        tx.execute(_LOCK_SQL, (key,))
