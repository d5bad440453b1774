"""Replay and eval handlers: the source of a replay, eval results kept per bundle digest."""

from __future__ import annotations

import base64

from agen.hub.auth import Principal
from agen.hub.fleet.definitions import get_definition_files
from agen.hub.observe.runs import find_run, message_view, run_views
from agen.hub.service import Hub
from agen.store import Tx, dumps, loads, now_ms
from agen.store.base import new_ulid
from agen.wire.evals import (
    EvalBatch,
    GetReplaySourceRequest,
    GetReplaySourceResponse,
    ListEvalRunsRequest,
    ListEvalRunsResponse,
    RecordEvalRunsRequest,
    RecordEvalRunsResponse,
)

MAX_MESSAGES = 5000


async def get_replay_source(
    hub: Hub, p: Principal, req: GetReplaySourceRequest
) -> GetReplaySourceResponse:
    run = await find_run(hub, p, req.id)
    rows = await hub.store.all(
        "SELECT * FROM messages WHERE run_id = ? ORDER BY seq LIMIT ?", (run.id, MAX_MESSAGES)
    )
    [view] = await run_views(hub, [run])
    raw = await hub.store.scalar("SELECT interactions FROM cassettes WHERE run_id = ?", (run.id,))
    def_id = await hub.store.scalar(
        "SELECT definition_id FROM deployments WHERE namespace = ? AND name = ?",
        (run.namespace, run.deployment),
    )
    files = None
    if def_id is not None:
        files = {
            path: base64.b64encode(data).decode()
            for path, data in (await get_definition_files(hub.store, str(def_id))).items()
        }
    return GetReplaySourceResponse(
        run=view,
        messages=[message_view(r) for r in rows],
        interactions=loads(raw) if raw else None,
        files=files,
    )


async def record_eval_runs(
    hub: Hub, p: Principal, req: RecordEvalRunsRequest
) -> RecordEvalRunsResponse:
    p.require_namespace(req.namespace)
    batch = new_ulid()

    def write(tx: Tx) -> None:
        at = now_ms()
        tx.executemany(
            "INSERT INTO eval_runs (id, namespace, bundle, digest, batch, scenario, run_index, passed, failures,"
            " duration_ms, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    new_ulid(),
                    req.namespace,
                    req.bundle,
                    req.digest,
                    batch,
                    r.scenario,
                    r.run_index,
                    int(r.passed),
                    dumps(r.failures),
                    r.duration_ms,
                    at,
                )
                for r in req.runs
            ],
        )

    await hub.store.write(write)
    return RecordEvalRunsResponse(batch=batch, recorded=len(req.runs))


async def list_eval_runs(hub: Hub, p: Principal, req: ListEvalRunsRequest) -> ListEvalRunsResponse:
    p.require_namespace(req.namespace)
    batches = await hub.store.all(
        "SELECT batch, digest, MIN(created_ms) AS at FROM eval_runs WHERE namespace = ? AND bundle = ?"
        " GROUP BY batch, digest ORDER BY at DESC LIMIT ?",
        (req.namespace, req.bundle, req.limit),
    )
    out: list[EvalBatch] = []
    for b in batches:
        rows = await hub.store.all(
            "SELECT scenario, SUM(passed) AS ok, COUNT(*) AS n FROM eval_runs"
            " WHERE batch = ? GROUP BY scenario ORDER BY scenario",
            (b["batch"],),
        )
        out.append(
            EvalBatch(
                batch=b["batch"],
                digest=b["digest"],
                created_ms=int(b["at"]),
                scenarios={r["scenario"]: [int(r["ok"]), int(r["n"])] for r in rows},
            )
        )
    return ListEvalRunsResponse(evals=out)
