"""Holds and the inbox: pause/resume a task or a deployment's tasks, wake waiting tasks.

A hold is lazy: leasing skips an effectively held task (held and no deadline or a
future one); a running task notices it through ``is_held`` at its next turn and
suspends with wait_for "resume", which only ResumeTask or the deadline sweep wakes.
"""

from __future__ import annotations

from typing import Any

from agen.store import Tx


def pause_task(tx: Tx, task_id: str, until_ms: int | None = None, reason: str | None = None) -> dict[str, Any]:
    """Hold an unfinished task (until ``until_ms``, or until resumed)."""
    raise NotImplementedError


def resume_task(tx: Tx, task_id: str) -> dict[str, Any]:
    """Clear a task's hold; a task suspended on "resume" is requeued at urgent priority."""
    raise NotImplementedError


def hold_deployment(tx: Tx, deployment_id: str, until_ms: int | None = None, reason: str | None = None) -> int:
    """Hold every unfinished task of a deployment; returns how many."""
    raise NotImplementedError


def resume_deployment_hold(tx: Tx, deployment_id: str) -> int:
    """Clear the holds hold_deployment put in place; returns how many tasks."""
    raise NotImplementedError


def is_held(tx: Tx, task_id: str) -> bool:
    """Effective hold: held and (no deadline or a deadline still ahead)."""
    raise NotImplementedError


def wake_expired_holds(tx: Tx, now_ms: int) -> list[str]:
    """Requeue tasks suspended on "resume" whose hold deadline passed; returns their ids."""
    raise NotImplementedError


def write_inbox(tx: Tx, task_id: str, kind: str, ref: str | None, payload: Any = None) -> str:
    """Record something for a task; wakes it (urgent, no attempt) when it waits for exactly this."""
    raise NotImplementedError
