"""Shared set-up for trigger, budget, hold and admission tests: a store with deployment rows."""

from __future__ import annotations

from typing import Any

from agen.domain import DeploymentRow
from agen.store import Store, Tx, dumps, new_ulid
from agen.store.records import read


def insert_deployment(
    tx: Tx,
    name: str,
    *,
    namespace: str = "default",
    budget: dict[str, Any] | None = None,
    admission: dict[str, Any] | None = None,
    paused: bool = False,
) -> DeploymentRow:
    def_id = f"{name}@sha256:{'0' * 64}"
    tx.execute(
        "INSERT INTO definitions (id, name, digest, files, size, created_ms) VALUES (?,?,?,?,?,?)"
        " ON CONFLICT DO NOTHING",
        (def_id, name, "sha256:" + "0" * 64, b"", 0, tx.now_ms),
    )
    dep_id = new_ulid()
    tx.execute(
        "INSERT INTO deployments (id, namespace, name, kind, definition_id, digest, scale, budget, policy,"
        " desired, paused, last_activity_ms, created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            dep_id,
            namespace,
            name,
            "pool",
            def_id,
            "sha256:" + "0" * 64,
            dumps({"min": 0, "max": 1}),
            dumps(budget or {}),
            dumps({"admission": admission or {}}),
            0,
            int(paused),
            tx.now_ms,
            tx.now_ms,
            tx.now_ms,
        ),
    )
    row = tx.one("SELECT * FROM deployments WHERE id = ?", (dep_id,))
    assert row is not None
    return read(DeploymentRow, row)


async def deployment(store: Store, name: str, **kwargs: Any) -> DeploymentRow:
    return await store.write(lambda tx: insert_deployment(tx, name, **kwargs))


def add_usage(
    tx: Tx,
    dep: DeploymentRow,
    cost: float,
    *,
    day: str,
    labels: dict[str, str] | None = None,
    status: str = "succeeded",
    finished_ms: int | None = None,
) -> str:
    """A finished run with one usage row costing ``cost`` on ``day``."""
    run_id = new_ulid()
    sess, conv = new_ulid(), new_ulid()
    now = tx.now_ms
    tx.execute(
        "INSERT INTO sessions (id, namespace, deployment, created_ms, updated_ms) VALUES (?,?,?,?,?)",
        (sess, dep.namespace, dep.name, now, now),
    )
    tx.execute(
        "INSERT INTO conversations (id, session_id, namespace, deployment, created_ms, updated_ms)"
        " VALUES (?,?,?,?,?,?)",
        (conv, sess, dep.namespace, dep.name, now, now),
    )
    tx.execute(
        "INSERT INTO runs (id, namespace, deployment, session_id, conversation_id, root_run_id, trace_id, status,"
        " labels, started_ms, updated_ms, finished_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            run_id,
            dep.namespace,
            dep.name,
            sess,
            conv,
            run_id,
            run_id,
            status,
            dumps(labels or {}),
            now,
            now,
            finished_ms if finished_ms is not None else now,
        ),
    )
    tx.execute(
        "INSERT INTO usage (id, run_id, namespace, deployment, cost_usd, day, created_ms) VALUES (?,?,?,?,?,?,?)",
        (new_ulid(), run_id, dep.namespace, dep.name, cost, day, now),
    )
    return run_id
