"""Replay and eval handlers: the source of a replay, eval results kept per bundle digest."""

from __future__ import annotations

import base64
from typing import NamedTuple

from agen.domain import columns
from agen.errors import InvalidError, NotFoundError
from agen.hub.auth import Principal
from agen.hub.definitions import get_definition_files
from agen.hub.rpc.runs import MessageRow, find_run, message_view, run_views
from agen.hub.service import Hub
from agen.store import Tx, dumps, loads, now_ms
from agen.store.base import new_ulid
from agen.store.records import Count
from agen.wire.evals import (
    EvalBatch,
    EvalCheck,
    EvalRunOut,
    GetEvalRunsRequest,
    GetEvalRunsResponse,
    GetReplaySourceRequest,
    GetReplaySourceResponse,
    ListEvalRunsRequest,
    ListEvalRunsResponse,
    RecordEvalRunsRequest,
    RecordEvalRunsResponse,
)

MAX_MESSAGES = 5000


class _Batch(NamedTuple):
    """One recorded ``agen eval`` (a batch of eval_runs): its bundle, digest and when (``at``)."""

    batch: str
    bundle: str
    digest: str
    at: int


class _Scenario(NamedTuple):
    """A scenario of a batch: runs passed (``ok``) of ``n``, and the mean score."""

    scenario: str
    ok: Count
    n: Count
    score: float


class _Digest(NamedTuple):
    digest: str


class _EvalRun(NamedTuple):
    """One row of ``eval_runs`` as GetEvalRuns shows it (JSON columns as text)."""

    scenario: str
    run_index: int
    passed: bool
    failures: str
    duration_ms: int
    score: float | None  # None: recorded before scores were (passed reads as 1.0)
    input_tokens: int
    output_tokens: int
    cost_usd: float
    checks: str


async def get_replay_source(
    hub: Hub, p: Principal, req: GetReplaySourceRequest
) -> GetReplaySourceResponse:
    run = await find_run(hub, p, req.id)
    rows = await hub.store.rows(
        MessageRow,
        f"SELECT {columns(MessageRow)} FROM messages WHERE run_id = ? ORDER BY seq LIMIT ?",
        (run.id, MAX_MESSAGES),
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
            " duration_ms, created_ms, score, input_tokens, output_tokens, cost_usd, checks)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    r.score,
                    r.input_tokens,
                    r.output_tokens,
                    r.cost_usd,
                    dumps([c.model_dump(mode="json") for c in r.checks]),
                )
                for r in req.runs
            ],
        )

    await hub.store.write(write)
    return RecordEvalRunsResponse(batch=batch, recorded=len(req.runs))


async def list_eval_runs(hub: Hub, p: Principal, req: ListEvalRunsRequest) -> ListEvalRunsResponse:
    p.require_namespace(req.namespace)
    batches = await hub.store.rows(
        _Batch,
        "SELECT batch, bundle, digest, MIN(created_ms) AS at FROM eval_runs WHERE namespace = ?"
        " AND bundle = ? GROUP BY batch, bundle, digest ORDER BY at DESC LIMIT ?",
        (req.namespace, req.bundle, req.limit),
    )
    out: list[EvalBatch] = []
    for b in batches:
        rows = await hub.store.rows(
            _Scenario,
            "SELECT scenario, SUM(passed) AS ok, COUNT(*) AS n,"
            " AVG(COALESCE(score, CASE WHEN passed = 1 THEN 1.0 ELSE 0.0 END)) AS score FROM eval_runs"
            " WHERE batch = ? GROUP BY scenario ORDER BY scenario",
            (b.batch,),
        )
        out.append(
            EvalBatch(
                batch=b.batch,
                digest=b.digest,
                created_ms=int(b.at),
                scenarios={r.scenario: [r.ok, r.n] for r in rows},
                scores={r.scenario: round(r.score, 4) for r in rows},
            )
        )
    return ListEvalRunsResponse(evals=out)


async def get_eval_runs(hub: Hub, p: Principal, req: GetEvalRunsRequest) -> GetEvalRunsResponse:
    """A recorded eval by its id, or the newest one of a digest (``sha256:…``, or its hex alone)."""
    p.require_namespace(req.namespace)
    digest = req.ref if req.ref.startswith("sha256:") else f"sha256:{req.ref}"
    # a digest as tables show it (sha256: and its first 12 hex digits) names the newest eval of
    # the one digest it starts; shorter would be ambiguous too easily
    full = len(digest) >= 71 or len(digest) < len("sha256:") + 12
    sql = (
        "SELECT batch, bundle, digest, MIN(created_ms) AS at FROM eval_runs WHERE namespace = ?"
        f" AND (batch = ? OR digest {'=' if full else 'LIKE'} ?)"
    )
    params: list[object] = [req.namespace, req.ref, digest if full else digest + "%"]
    if not full:
        many = await hub.store.rows(
            _Digest,
            "SELECT DISTINCT digest FROM eval_runs WHERE namespace = ? AND digest LIKE ? LIMIT 2",
            (req.namespace, digest + "%"),
        )
        if len(many) > 1:
            raise InvalidError(
                f"{req.ref!r} starts more than one evaluated digest; give more of it",
                field="ref",
            )
    if req.bundle:
        sql += " AND bundle = ?"
        params.append(req.bundle)
    head = await hub.store.row(
        _Batch, sql + " GROUP BY batch, bundle, digest ORDER BY at DESC, batch DESC LIMIT 1", params
    )
    if head is None:
        of = f" of {req.bundle}" if req.bundle else ""
        raise NotFoundError(
            f"no recorded eval{of} with id or digest {req.ref!r}; `agen eval history <name>` lists them",
            ref=req.ref,
        )
    rows = await hub.store.rows(
        _EvalRun,
        f"SELECT {columns(_EvalRun)} FROM eval_runs WHERE batch = ? ORDER BY scenario, run_index",
        (head.batch,),
    )
    return GetEvalRunsResponse(
        batch=head.batch,
        bundle=head.bundle,
        digest=head.digest,
        created_ms=int(head.at),
        runs=[
            EvalRunOut(
                scenario=r.scenario,
                run_index=r.run_index,
                passed=r.passed,
                failures=loads(r.failures, []) or [],
                duration_ms=r.duration_ms,
                score=r.score if r.score is not None else (1.0 if r.passed else 0.0),
                input_tokens=r.input_tokens,
                output_tokens=r.output_tokens,
                cost_usd=r.cost_usd,
                checks=[EvalCheck.model_validate(c) for c in loads(r.checks, []) or []],
            )
            for r in rows
        ],
    )
