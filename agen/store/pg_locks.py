"""The advisory lock that leasing writes on Postgres take before a decision that reads rows they do not lock.

Kept apart from agen.store.postgres (which needs psycopg, an optional extra) so hub code can name it.
A leasing write (``Store.write_leasing``) runs beside other leasing writes: each locks the task rows it
leases (``FOR UPDATE SKIP LOCKED``), so two of them never lease one task. A decision that also reads rows it
does not lock (a conversation's other tasks, named lock holders, a provider's probe, a label budget) would
race another leasing write's decision; ``serialize_leasing`` makes such decisions one at a time. Ordinary
writes exclude every leasing write, so they never need it.
"""

from __future__ import annotations

from agen.store.base import Tx

LEASE_LOCK_KEY = 0x6167656E_6C7365  # "agen" "lse"


def serialize_leasing(tx: Tx) -> None:
    """Wait until no other leasing write holds the lease lock, then hold it to this transaction's end.

    Statements after it see every leasing write that held it before (READ COMMITTED: each statement reads
    what was committed when it began). Nothing on SQLite, whose one writer already serialises everything."""
    if tx.dialect == "postgres":
        tx.execute(f"SELECT pg_advisory_xact_lock({LEASE_LOCK_KEY})")
