"""What a Nest's instances touch in the Store, in one place (seed 000 §10, ``store.HostTables``).

Runners write run data straight to the Store (agen.runner.records and friends); nothing else of the
Hub's state is theirs. ``agen store host-role`` (agen.store.host_role) makes a Postgres role limited to
these tables, and that role's URL is what Nests are given. A migration that adds a table hosts write
must add it here too, and the command must be run again for every host role.

Each table says which of its rows belong to a namespace, for ``--namespace``'s row-level security: its
own ``namespace`` column, or (a child table) that its parent row is visible to the role, so a message
follows its conversation, an effect its run, an inbox row its task's run.
"""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE = "namespace"


@dataclass(frozen=True)
class HostTable:
    name: str
    parent: tuple[str, str, str] | None = None
    """``(table, its key, our column)``: rows visible when that parent row is; None: ``namespace``."""
    append_only: bool = False
    """Rows are added and read, never changed (the event log)."""


HOST_TABLES: tuple[HostTable, ...] = (
    HostTable("sessions"),
    HostTable("conversations"),
    HostTable("runs"),
    HostTable("messages", parent=("conversations", "id", "conversation_id")),
    HostTable("effects", parent=("runs", "id", "run_id")),
    HostTable("run_inbox", parent=("runs", "task_id", "task_id")),
    HostTable("spans"),
    HostTable("usage"),
    HostTable("approvals"),
    HostTable("artifacts"),
    HostTable("cassettes"),
    HostTable("memory_blocks"),
    HostTable("memory_versions"),
    HostTable("tool_rate_calls"),
    HostTable("events", append_only=True),
    HostTable("feedback", append_only=True),  # the reviewer's grades, written with a checkpoint
)
"""The run-data tables: read and written by hosts (events only added to and read)."""

HOST_READS = ("schema_migrations",)
"""Read, never written: the engine checks the schema is current before it opens the Store."""

TASK_PAUSE_COLUMNS = ("id", "held", "held_until_ms")
"""The one thing a host reads of tasks: whether its task is paused (agen.runner.records.task_held),
read in the statement that writes each checkpoint. Not the input, outcome or anything else."""
