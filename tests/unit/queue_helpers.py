"""Shared set-up for the queue, leader and scheduler tests: a real store with deployments and Nests."""

from __future__ import annotations

from typing import Any

from agen.hub.queue import NewTask
from agen.store import Tx, dumps, new_ulid


def add_deployment(
    tx: Tx,
    name: str = "d",
    *,
    namespace: str = "default",
    kind: str = "pool",
    scale: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    desired: int = 0,
    paused: bool = False,
    last_activity_ms: int | None = None,
) -> str:
    digest = "sha256:" + "0" * 64
    def_id = f"{name}@{digest}"
    tx.execute(
        "INSERT INTO definitions (id, name, digest, files, size, created_ms) VALUES (?,?,?,?,?,?)"
        " ON CONFLICT DO NOTHING",
        (def_id, name, digest, b"", 0, tx.now_ms),
    )
    dep_id = new_ulid()
    tx.execute(
        "INSERT INTO deployments (id, namespace, name, kind, definition_id, digest, scale, placement, desired,"
        " paused, last_activity_ms, created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            dep_id,
            namespace,
            name,
            kind,
            def_id,
            digest,
            dumps(scale or {"min": 0, "max": 4}),
            dumps({"labels": labels or {}}),
            desired,
            int(paused),
            tx.now_ms if last_activity_ms is None else last_activity_ms,
            tx.now_ms,
            tx.now_ms,
        ),
    )
    return dep_id


def add_nest(
    tx: Tx,
    name: str,
    *,
    capacity: int = 0,
    labels: dict[str, str] | None = None,
    heartbeat_ms: int | None = None,
) -> str:
    nest_id = new_ulid()
    tx.execute(
        "INSERT INTO nests (id, name, labels, capacity, last_heartbeat_ms, created_ms) VALUES (?,?,?,?,?,?)",
        (
            nest_id,
            name,
            dumps(labels or {}),
            capacity,
            tx.now_ms if heartbeat_ms is None else heartbeat_ms,
            tx.now_ms,
        ),
    )
    return nest_id


def new_task(dep_id: str, text: str = "hi", *, name: str = "d", **kw: Any) -> NewTask:
    return NewTask(namespace="default", deployment_id=dep_id, deployment=name, input=text, **kw)


def add_run(tx: Tx, task_id: str, *, namespace: str = "default", deployment: str = "d") -> str:
    """An unfinished run of a task (session and conversation included), as a host would open it."""
    now = tx.now_ms
    session_id, conv_id, run_id = new_ulid(), new_ulid(), new_ulid()
    tx.execute(
        "INSERT INTO sessions (id, namespace, deployment, created_ms, updated_ms) VALUES (?,?,?,?,?)",
        (session_id, namespace, deployment, now, now),
    )
    tx.execute(
        "INSERT INTO conversations (id, session_id, namespace, deployment, created_ms, updated_ms)"
        " VALUES (?,?,?,?,?,?)",
        (conv_id, session_id, namespace, deployment, now, now),
    )
    tx.execute(
        "INSERT INTO runs (id, namespace, deployment, task_id, session_id, conversation_id, root_run_id,"
        " trace_id, status, started_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            run_id,
            namespace,
            deployment,
            task_id,
            session_id,
            conv_id,
            run_id,
            "t" * 32,
            "running",
            now,
            now,
        ),
    )
    return run_id


def resume_run(
    tx: Tx, run_id: str, task_id: str, at_ms: int, *, namespace: str = "default"
) -> None:
    """The run opened or resumed by its host at ``at_ms``: the new top-level ``agen.run`` span the
    runner writes then (runner/records.py)."""
    tx.execute(
        "INSERT INTO spans (id, trace_id, run_id, task_id, namespace, deployment, name, status,"
        " started_ms) VALUES (?,?,?,?,?,?,?,?,?)",
        (new_ulid(), "t" * 32, run_id, task_id, namespace, "d", "agen.run", "unfinished", at_ms),
    )
