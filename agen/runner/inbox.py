"""The task's inbox drained into a running run before each model call (seed 000 §6 "Draining the
inbox into a running run"): what arrived for the task while its run worked becomes a user message.

- ``signal`` (another task's signal_agent): "[Signal from task <ref>] <message>"
- ``cancel`` (a graceful cancel or an interrupting submission): a request to wrap up and call finish;
  the run then gets that one turn (``RunState.wrap_up``; agen/runner/loop.py ends it cancelled)
- ``steer`` (a submission in the steer queue mode): "[New input for this conversation] <input>"

Other kinds stay where they are: "child" and "approval" rows are the resume path's business. The
rows are claimed (``consumed_ms``) in the same transaction as the checkpoint that stores their
messages, which is epoch-checked: a crash in between loses nothing and a fenced-off owner claims nothing.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from agen.runner.records import INBOX_KINDS as KINDS
from agen.runner.state import RunState
from agen.store.base import Store, Tx, loads
from agen.store.records import columns


class InboxRow(NamedTuple):
    """An unclaimed inbox row a run drains."""

    id: str
    kind: str
    ref: str | None
    payload: str | None  # JSON text


class _Payload(NamedTuple):
    payload: str | None  # JSON text


_PENDING = (
    f"SELECT {columns(InboxRow)} FROM run_inbox WHERE task_id = ? AND consumed_ms IS NULL"
    f" AND kind IN ({', '.join(repr(k) for k in KINDS)}) ORDER BY created_ms, id"
)


def note(kind: str, ref: str | None, payload: Any) -> str:
    """The user message one inbox row becomes."""
    body = payload.get("message", payload.get("input")) if isinstance(payload, dict) else payload
    text = "" if body is None else str(body)
    if kind == "signal":
        return f"[Signal from task {ref or 'unknown'}] {text}".rstrip()
    if kind == "steer":
        return f"[New input for this conversation] {text}".rstrip()
    grace = payload.get("grace_s") if isinstance(payload, dict) else None
    reason = payload.get("reason") if isinstance(payload, dict) else None
    within = f" within {grace:g} seconds" if isinstance(grace, int | float) else " shortly"
    return (
        f"[Cancel requested{': ' + str(reason) if reason else ''}] This task is being stopped. Do not start "
        f"new work: call finish now with what you have (say what is left undone). This is your last "
        f"turn: tools with side effects are refused in it, and the run is stopped{within} either way."
    )


def wrap_up_reason(payload: Any) -> str:
    """The outcome reason of a run stopped by a wrap-up request: ``interrupted`` when a new
    submission to its conversation asked for it, ``cancelled`` otherwise."""
    return "interrupted" if isinstance(payload, dict) and payload.get("interrupt") else "cancelled"


async def wrapping_up(store: Store, task_id: str) -> str | None:
    """A resumed run's wrap-up: a cancel row its task's run already read means that run was in its
    last turn (or suspended right after reading it) when it stopped, and so is the resumed one."""
    row = await store.row(
        _Payload,
        "SELECT payload FROM run_inbox WHERE task_id = ? AND kind = 'cancel'"
        " AND consumed_ms IS NOT NULL ORDER BY created_ms LIMIT 1",
        (task_id,),
    )
    return None if row is None else wrap_up_reason(loads(row.payload))


async def pending(store: Store, task_id: str) -> list[InboxRow]:
    """Unclaimed rows this module turns into messages, oldest first."""
    return await store.rows(InboxRow, _PENDING, (task_id,))


def claim(rows: list[InboxRow]) -> Any:
    """A transaction step marking ``rows`` consumed (run with the checkpoint that stores their messages)."""
    ids = [r.id for r in rows]

    def fn(tx: Tx) -> None:
        tx.execute(
            f"UPDATE run_inbox SET consumed_ms = ? WHERE id IN ({','.join('?' * len(ids))})"
            " AND consumed_ms IS NULL",
            (tx.now_ms, *ids),
        )

    return fn


async def drain(store: Store, st: RunState) -> int:
    """Turn the task's unclaimed rows into user messages and checkpoint them with the claim; how many."""
    if st.task_id is None or not st.inbox:  # the run's last write saw no row to drain
        return 0
    rows = await pending(store, st.task_id)
    if rows:
        for r in rows:
            payload = loads(r.payload)
            st.add_message("user", note(r.kind, r.ref, payload))
            if r.kind == "cancel" and st.wrap_up is None:
                st.wrap_up = wrap_up_reason(payload)
        await st.flush(store, also=claim(rows))
    return len(rows)
