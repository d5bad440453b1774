"""Memory blocks as stored rules (seed 000 §7, 3.10): versioned, namespace-scoped named text, each
write a ``memory_versions`` row, compare-and-set by expected version.

The Hub (GetMemory/SetMemory/RollbackMemory) and the engine (the agent's ``memory_update`` tool)
write the same rows by the same rules, so they live here, below both; rendering blocks into the
system prompt and the tool itself stay in agen.runner.memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from agen.errors import ConflictError, InvalidError, NotFoundError
from agen.store import new_ulid
from agen.store.base import Tx
from agen.store.records import columns

DEFAULT_LIMIT = 5000
OPERATIONS = ("replace", "append", "str_replace")


@dataclass(frozen=True)
class Author:
    """Who wrote a memory version: a run (the agent's memory_update) or a person (agen memory set)."""

    kind: str  # "run" | "person" | "unknown"
    id: str

    @classmethod
    def run(cls, run_id: str) -> Author:
        return cls("run", run_id)

    @classmethod
    def person(cls, subject: str) -> Author:
        return cls("person", subject)


UNKNOWN = Author("unknown", "unknown")


class MemoryBlockRow(NamedTuple):
    """One row of ``memory_blocks`` (0003_tools.sql, 0012)."""

    namespace: str
    id: str
    label: str
    description: str | None
    value: str
    limit_chars: int
    version: int
    updated_ms: int
    title: str | None = None


class _OldVersion(NamedTuple):
    """What a rollback copies from a ``memory_versions`` row."""

    value: str
    title: str | None
    description: str | None
    limit_chars: int


def get_block(tx: Tx, namespace: str, label: str) -> MemoryBlockRow | None:
    return tx.row(
        MemoryBlockRow,
        f"SELECT {columns(MemoryBlockRow)} FROM memory_blocks WHERE namespace = ? AND label = ?",
        (namespace, label),
    )


def check_version(label: str, current: int, expected: int | None) -> None:
    """Compare-and-set: a stale expected version is a 409 naming the current one."""
    if expected is not None and expected != current:
        raise ConflictError(
            f"memory block {label} is at version {current}, not {expected}: someone else updated it; "
            f"read the current value and apply your change to it (expected version {current})",
            version=current,
        )


def set_block(
    tx: Tx,
    namespace: str,
    label: str,
    value: str,
    *,
    description: str | None = None,
    limit_chars: int | None = None,
    title: str | None = None,
    expected_version: int | None = None,
    author: Author = UNKNOWN,
    note: str | None = None,
) -> MemoryBlockRow:
    """People's SetMemoryBlock: replace the value outright (creating the block if needed).

    Every write records a memory_versions row (value, author, time), so history and rollback
    see the agent's writes and people's alike. ``expected_version`` makes it a compare-and-set.
    """
    row = get_block(tx, namespace, label)
    check_version(label, row.version if row else 0, expected_version)
    limit = limit_chars or (row.limit_chars if row else DEFAULT_LIMIT)
    if len(value) > limit:
        raise InvalidError(
            f"memory block {label} would hold {len(value)} characters, over its limit of {limit}"
        )
    if row is None:
        tx.execute(
            "INSERT INTO memory_blocks (namespace, id, label, title, description, value, limit_chars, version,"
            " updated_ms) VALUES (?,?,?,?,?,?,?,1,?)",
            (namespace, new_ulid(), label, title, description, value, limit, tx.now_ms),
        )
    else:
        tx.execute(
            "UPDATE memory_blocks SET value = ?, description = COALESCE(?, description),"
            " title = COALESCE(?, title), limit_chars = ?, version = version + 1, updated_ms = ?"
            " WHERE namespace = ? AND label = ?",
            (value, description, title, limit, tx.now_ms, namespace, label),
        )
    new = get_block(tx, namespace, label)
    assert new is not None
    tx.execute(
        "INSERT INTO memory_versions (namespace, block_id, version, value, title, description, limit_chars,"
        " author_kind, author, note, created_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            namespace,
            new.id,
            new.version,
            new.value,
            new.title,
            new.description,
            new.limit_chars,
            author.kind,
            author.id,
            note,
            tx.now_ms,
        ),
    )
    return new


def update_block(
    tx: Tx,
    namespace: str,
    label: str,
    operation: str,
    value: str,
    *,
    old: str | None = None,
    expected_version: int | None = None,
    author: Author = UNKNOWN,
) -> MemoryBlockRow:
    """The agent's memory_update: replace / append / str_replace, with optional compare-and-set."""
    row = get_block(tx, namespace, label)
    current, version = (row.value, row.version) if row else ("", 0)
    if expected_version is not None and expected_version != version:
        raise ConflictError(
            f"memory block {label} is at version {version}, not {expected_version}: someone else updated it; "
            "read the current value in your system prompt and apply your change to it",
            version=version,
        )
    if operation == "replace":
        new = value
    elif operation == "append":
        new = f"{current}\n{value}" if current else value
    elif operation == "str_replace":
        if not old:
            raise InvalidError("str_replace needs old: the exact text to replace")
        count = current.count(old)
        if count != 1:
            raise InvalidError(
                f"old occurs {count} times in memory block {label}; it must occur exactly once"
            )
        new = current.replace(old, value, 1)
    else:
        raise InvalidError(f"operation must be one of {', '.join(OPERATIONS)} (got {operation!r})")
    return set_block(tx, namespace, label, new, author=author)


def rollback_block(
    tx: Tx,
    namespace: str,
    label: str,
    to_version: int,
    *,
    expected_version: int | None = None,
    author: Author = UNKNOWN,
) -> MemoryBlockRow:
    """Write a new version equal to an earlier one (value, title, description, limit); history is kept."""
    row = get_block(tx, namespace, label)
    if row is None:
        raise NotFoundError(
            f"no memory block {label} in namespace {namespace!r}; `agen memory ls` lists them",
            block=label,
        )
    check_version(label, row.version, expected_version)
    old = tx.row(
        _OldVersion,
        f"SELECT {columns(_OldVersion)} FROM memory_versions"
        " WHERE namespace = ? AND block_id = ? AND version = ?",
        (namespace, row.id, to_version),
    )
    if old is None:
        raise NotFoundError(
            f"memory block {label} has no version {to_version} (it is at version {row.version}); "
            f"`agen memory history {label}` lists its versions",
            block=label,
            version=to_version,
        )
    return set_block(
        tx,
        namespace,
        label,
        old.value,
        description=old.description,
        title=old.title,
        limit_chars=old.limit_chars,
        author=author,
        note=f"rollback to version {to_version}",
    )
