"""The effect ledger: a side-effecting tool call is recorded ``started`` before it runs and
``completed`` (with its result) after, each write epoch-checked like a checkpoint.

On resume, a started effect with no completion is not run again: the model is told
``effect_unknown``, and so are operators: the run is marked (runs.effect_unknown, shown on the
run and its task, ``agen runs --effect-unknown``) and a ``run.effect_unknown`` warning event is
recorded, because someone has to check what really happened. An idempotent tool's key is
derived from its arguments, so the call may simply run again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, NamedTuple

from agen.runner.records import check_epoch
from agen.store.base import Tx, dumps
from agen.util.canonical import canonical_json

EFFECT_UNKNOWN = (
    "effect_unknown: this call to {tool} was started before the run was interrupted and its completion was "
    "never recorded, so agen did not run it again. Check whether it took effect before repeating it."
)


def effect_key(
    run_id: str, turn: int, call_index: int, tool: str, args: dict[str, Any], idempotent: bool
) -> str:
    if idempotent:
        return "idem:" + hashlib.sha256(f"{tool}\x00{canonical_json(args)}".encode()).hexdigest()
    return f"{run_id}.{turn}.{call_index}"


class EffectRow(NamedTuple):
    """One row of the effect ledger, as ``read_effects`` takes it."""

    key: str
    tool: str
    state: str
    result: str | None  # JSON text


@dataclass(frozen=True)
class Effect:
    key: str
    tool: str
    state: str
    result: dict[str, Any] | None  # completed/failed: {content, is_error}; started: {note}


def note_effect(run_id: str, epoch: int, key: str, note: dict[str, Any]) -> Any:
    """What a started call records for its own repeat (call_agent: the remote task id), kept in
    ``result`` until the call ends and its real result replaces it (epoch-checked)."""

    def fn(tx: Tx) -> None:
        check_epoch(tx, run_id, epoch)
        tx.execute(
            "UPDATE effects SET result = ? WHERE run_id = ? AND key = ? AND state = 'started'",
            (dumps({"note": note}), run_id, key),
        )

    return fn


def started_note(result: Any) -> dict[str, Any] | None:
    """The note a started effect's ``result`` column holds (JSON text or None), if any."""
    data = json.loads(result) if isinstance(result, str) and result else None
    note = data.get("note") if isinstance(data, dict) else None
    return dict(note) if isinstance(note, dict) else None


def start_effect(run_id: str, epoch: int, key: str, tool: str, call_id: str) -> Any:
    def fn(tx: Tx) -> None:
        check_epoch(tx, run_id, epoch)
        tx.execute(
            "INSERT INTO effects (run_id, key, tool, call_id, state, epoch, started_ms) VALUES (?,?,?,?,'started',?,?)"
            " ON CONFLICT (run_id, key) DO UPDATE SET state = 'started', call_id = excluded.call_id,"
            " epoch = excluded.epoch, started_ms = excluded.started_ms, completed_ms = NULL, result = NULL",
            (run_id, key, tool, call_id, epoch, tx.now_ms),
        )

    return fn


def complete_effect(
    run_id: str, epoch: int, key: str, *, ok: bool, content: str, is_error: bool
) -> Any:
    def fn(tx: Tx) -> None:
        check_epoch(tx, run_id, epoch)
        tx.execute(
            "UPDATE effects SET state = ?, result = ?, completed_ms = ?, epoch = ? WHERE run_id = ? AND key = ?",
            (
                "completed" if ok else "failed",
                dumps({"content": content, "is_error": is_error}),
                tx.now_ms,
                epoch,
                run_id,
                key,
            ),
        )

    return fn


@dataclass(frozen=True)
class UnknownEffect:
    """A started-but-unconfirmed effect met on resume."""

    tool: str
    call_id: str
    key: str


def mark_effect_unknown(
    run_id: str,
    epoch: int,
    namespace: str,
    deployment: str | None,
    task_id: str | None,
    unknown: list[UnknownEffect],
) -> Any:
    """Flag the run and record one ``run.effect_unknown`` warning per call (epoch-checked)."""

    def fn(tx: Tx) -> None:
        check_epoch(tx, run_id, epoch)
        tx.execute("UPDATE runs SET effect_unknown = 1 WHERE id = ?", (run_id,))
        for u in unknown:
            tx.event(
                namespace,
                "run.effect_unknown",
                severity="warning",
                deployment=deployment or None,
                task_id=task_id,
                run_id=run_id,
                data={
                    "tool": u.tool,
                    "call_id": u.call_id,
                    "effect_key": u.key,
                    "message": f"{u.tool} was started before the run was interrupted and its completion "
                    "was never recorded; check whether it took effect",
                },
            )

    return fn


def read_effects(rows: list[EffectRow]) -> dict[str, Effect]:
    out: dict[str, Effect] = {}
    for r in rows:
        result = json.loads(r.result) if r.result else None
        out[r.key] = Effect(r.key, r.tool, r.state, result)
    return out
