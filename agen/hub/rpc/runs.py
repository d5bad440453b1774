"""Read RPCs over recorded run data: ListRuns, GetTranscript, GetTrace, QueryTask.

Runners write runs, messages and spans straight to the Store (DESIGN.md §1); these
handlers only read, through the indexes the schema already has (runs by namespace and
start, by root, by task; messages by run or conversation; spans by trace).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from agen.domain import RunRow, TaskStatus, columns
from agen.errors import NotFoundError
from agen.hub.auth import Principal
from agen.hub.observe.activity import run_activity
from agen.hub.observe.feedback import of_run, summaries
from agen.hub.observe.live import activities, run_usage, tasks_by_id
from agen.hub.rpc._known import check_namespace, require_known_deployment
from agen.hub.rpc.tasks import load_task
from agen.hub.service import Hub
from agen.otel.ids import agen_trace_id
from agen.store import loads
from agen.store.records import Amount, Count
from agen.wire.observe import (
    GetTraceRequest,
    GetTraceResponse,
    GetTranscriptRequest,
    GetTranscriptResponse,
    ListRunsRequest,
    ListRunsResponse,
    QueryTaskRequest,
    QueryTaskResponse,
    Run,
    Span,
    ToolCall,
    TranscriptMessage,
    Usage,
)

MAX_SPANS = 5000
MAX_MESSAGES = 5000


class TreeUsage(NamedTuple):
    """What every run of a tree used (SUMs: NULL on no rows, ``numeric`` on Postgres)."""

    root_run_id: str
    n: Count
    input_tokens: Count
    output_tokens: Count
    cached_tokens: Count
    cost_usd: Amount


class MessageRow(NamedTuple):
    """The columns of ``messages`` a transcript shows (not the provider's raw response)."""

    seq: int
    run_id: str
    turn: int
    role: str
    content: str | None
    tool_calls: str | None  # JSON text
    tool_call_id: str | None
    name: str | None
    is_error: bool
    model: str | None
    usage: str | None  # JSON text
    created_ms: int


class SpanRow(NamedTuple):
    """One row of ``spans`` (0001_core.sql)."""

    id: str
    trace_id: str
    parent_id: str | None
    run_id: str | None
    task_id: str | None
    namespace: str
    deployment: str | None
    name: str
    status: str
    attrs: str  # JSON text
    error: str | None
    started_ms: int
    ended_ms: int | None


class _TaskWhere(NamedTuple):
    namespace: str
    state: str


class _Definition(NamedTuple):
    digest: str
    files: bytes  # the packed bundle


class _RunTrace(NamedTuple):
    namespace: str
    trace_id: str


def usage_of(row: TreeUsage) -> Usage:
    return Usage(
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cached_tokens=row.cached_tokens,
        cost_usd=row.cost_usd,
    )


def run_view(row: RunRow, task: TaskStatus | None = None) -> Run:
    act = run_activity(
        row.status,
        finished=row.finished_ms is not None,
        task_state=task.state if task else None,
        held=bool(task and task.held),
    )
    return Run(
        id=row.id,
        namespace=row.namespace,
        deployment=row.deployment,
        task_id=row.task_id,
        parent_run_id=row.parent_run_id,
        root_run_id=row.root_run_id,
        trace_id=row.trace_id,
        status=row.status,
        activity=act.word,
        stopped_reason=act.stopped_reason,
        needs=act.needs,
        source=row.source,
        requested_by=row.requested_by,
        labels=loads(row.labels, {}),
        model=row.model,
        turns=row.turns,
        usage=run_usage(row),
        input=row.input,
        outcome=loads(row.outcome),
        effect_unknown=row.effect_unknown,
        started_ms=row.started_ms,
        updated_ms=row.updated_ms,
        finished_ms=row.finished_ms,
    )


async def run_views(hub: Hub, rows: list[RunRow]) -> list[Run]:
    tasks = await tasks_by_id(hub, [r.task_id for r in rows if r.finished_ms is None and r.task_id])
    rated = await summaries(hub.store, [r.id for r in rows])
    views = [run_view(r, tasks.get(r.task_id or "")) for r in rows]
    for v in views:
        v.feedback = rated.get(v.id)
    return views


async def list_runs(hub: Hub, p: Principal, req: ListRunsRequest) -> ListRunsResponse:
    p.require_namespace(req.namespace)
    await require_known_deployment(hub, [req.namespace], req.deployment, "runs")
    sql = "SELECT * FROM runs WHERE namespace = ?"
    params: list[Any] = [req.namespace]
    if req.deployment:
        sql += " AND deployment = ?"
        params.append(req.deployment)
    if req.task_id:
        sql += " AND task_id = ?"
        params.append(req.task_id)
    if req.status:
        sql += " AND status = ?"
        params.append(req.status)
    if req.effect_unknown:
        sql += " AND effect_unknown = 1"
    if req.roots:
        sql += " AND parent_run_id IS NULL"
    if req.since_ms is not None:
        sql += " AND started_ms >= ?"
        params.append(hub.clock() - req.since_ms)
    for key, value in sorted(
        req.labels.items()
    ):  # json_each, as ListTasks: any key, no JSON-path quoting
        sql += " AND EXISTS (SELECT 1 FROM json_each(runs.labels) WHERE json_each.key = ? AND json_each.value = ?)"
        params += [key, value]
    rows = await hub.store.rows(
        RunRow, sql + " ORDER BY started_ms DESC, id DESC LIMIT ?", [*params, req.limit]
    )
    runs = await run_views(hub, rows)
    if req.roots and runs:
        ids = [r.id for r in runs]
        trees = await hub.store.rows(
            TreeUsage,
            "SELECT root_run_id, COUNT(*) AS n, SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,"
            " SUM(cached_tokens) AS cached_tokens, SUM(cost_usd) AS cost_usd FROM runs"
            f" WHERE root_run_id IN ({','.join('?' * len(ids))}) GROUP BY root_run_id",
            ids,
        )
        by_root = {t.root_run_id: t for t in trees}
        for run in runs:
            tree = by_root.get(run.id)
            if tree is not None:
                run.tree_usage, run.tree_runs = usage_of(tree), tree.n
    return ListRunsResponse(runs=runs)


async def find_run(hub: Hub, p: Principal, ref: str, namespace: str | None = None) -> RunRow:
    """A run by its id, or the run of a task id."""
    row = await hub.store.row(RunRow, "SELECT * FROM runs WHERE id = ?", (ref,))
    if row is None:
        row = await hub.store.row(RunRow, "SELECT * FROM runs WHERE task_id = ?", (ref,))
    if row is None or not p.sees(row.namespace):
        task = await hub.store.row(
            _TaskWhere, f"SELECT {columns(_TaskWhere)} FROM tasks WHERE id = ?", (ref,)
        )
        if task is not None and p.sees(task.namespace):
            raise NotFoundError(
                f"task {ref} has no run yet (it is {task.state}); `agen query {ref}` shows why",
                task=ref,
            )
        raise NotFoundError(f"no run or task {ref}; `agen runs` lists recent runs", run=ref)
    check_namespace("run", ref, row.namespace, namespace)
    return row


def message_view(m: MessageRow) -> TranscriptMessage:
    """A message as a transcript shows it."""
    calls = [
        ToolCall(
            id=str(c.get("id") or ""), name=str(c.get("name") or ""), arguments=c.get("arguments")
        )
        for c in loads(m.tool_calls, []) or []
    ]
    return TranscriptMessage(
        seq=m.seq,
        run_id=m.run_id,
        turn=m.turn,
        role=m.role,
        content=m.content,
        tool_calls=calls,
        tool_call_id=m.tool_call_id,
        name=m.name,
        is_error=m.is_error,
        model=m.model,
        usage=loads(m.usage),
        created_ms=m.created_ms,
    )


async def _system_prompt(hub: Hub, run: RunRow) -> str | None:
    """The bundle's system prompt for the definition the run started on (memory sections excluded)."""
    from agen.bundle import load_bundle_files
    from agen.domain.prompt import system_prompt
    from agen.hub.definitions import unpack

    attrs = await hub.store.scalar(
        "SELECT attrs FROM spans WHERE run_id = ? AND name = 'agen.run' ORDER BY started_ms LIMIT 1",
        (run.id,),
    )
    digest = (loads(attrs, {}) or {}).get("agen.definition.digest")
    sql = f"SELECT {columns(_Definition)} FROM definitions WHERE digest = ? LIMIT 1"
    params = [digest]
    if not digest:
        sql = (
            "SELECT f.digest, f.files FROM deployments d JOIN definitions f ON f.id = d.definition_id"
            " WHERE d.namespace = ? AND d.name = ?"
        )
        params = [run.namespace, run.deployment]
    row = await hub.store.row(_Definition, sql, params)
    if row is None:
        return None
    return system_prompt(load_bundle_files(unpack(bytes(row.files), expect_digest=row.digest)))


async def get_transcript(
    hub: Hub, p: Principal, req: GetTranscriptRequest
) -> GetTranscriptResponse:
    run = await find_run(hub, p, req.id, req.namespace)
    if req.history:
        last = await hub.store.scalar("SELECT MAX(seq) FROM messages WHERE run_id = ?", (run.id,))
        rows = await hub.store.rows(
            MessageRow,
            f"SELECT {columns(MessageRow)} FROM messages WHERE conversation_id = ? AND seq > ?"
            " AND seq <= ? ORDER BY seq LIMIT ?",
            (run.conversation_id, req.after_seq, int(last or 0), MAX_MESSAGES),
        )
    else:
        rows = await hub.store.rows(
            MessageRow,
            f"SELECT {columns(MessageRow)} FROM messages WHERE run_id = ? AND seq > ?"
            " ORDER BY seq LIMIT ?",
            (run.id, req.after_seq, MAX_MESSAGES),
        )
    [view] = await run_views(hub, [run])
    system = await _system_prompt(hub, run) if req.system else None
    return GetTranscriptResponse(
        run=view,
        system=system,
        messages=[message_view(r) for r in rows],
        feedback=await of_run(hub.store, run.id),
    )


def span_view(row: SpanRow) -> Span:
    ended = row.ended_ms
    return Span(
        id=row.id,
        parent_id=row.parent_id,
        trace_id=row.trace_id,
        run_id=row.run_id,
        task_id=row.task_id,
        deployment=row.deployment,
        name=row.name,
        status=row.status,
        attrs=loads(row.attrs, {}),
        error=row.error,
        started_ms=row.started_ms,
        ended_ms=ended,
        duration_ms=None if ended is None else ended - row.started_ms,
    )


async def get_trace(hub: Hub, p: Principal, req: GetTraceRequest) -> GetTraceResponse:
    run = await hub.store.row(
        _RunTrace,
        f"SELECT {columns(_RunTrace)} FROM runs WHERE task_id = ? OR id = ? LIMIT 1",
        (req.id, req.id),
    )
    trace_id = (
        run.trace_id if run is not None else agen_trace_id(req.id)
    )  # also as OTel shows it (hex)
    if run is not None and not p.sees(run.namespace):
        run = None
    rows = await hub.store.rows(
        SpanRow,
        "SELECT * FROM spans WHERE trace_id = ?"
        " ORDER BY started_ms, json_extract(attrs, '$.\"gen_ai.tool.call.id\"'), id LIMIT ?",
        (trace_id, MAX_SPANS),
    )
    rows = [r for r in rows if p.sees(r.namespace)]
    if rows and req.namespace is not None:
        check_namespace(
            "trace",
            req.id,
            rows[0].namespace if run is None else run.namespace,
            req.namespace,
        )
    if not rows:
        await find_run(hub, p, req.id)  # a task without a run says so
        raise NotFoundError(
            f"no spans for {req.id}: not a task, run or trace id with recorded spans", trace=req.id
        )
    run_ids = sorted({r.run_id for r in rows if r.run_id})
    run_rows = (
        await hub.store.rows(
            RunRow,
            f"SELECT * FROM runs WHERE id IN ({','.join('?' * len(run_ids))}) ORDER BY started_ms",
            run_ids,
        )
        if run_ids
        else []
    )
    runs = await run_views(hub, run_rows)
    spans = [span_view(r) for r in rows]
    ends = [s.ended_ms for s in spans]
    total = Usage(
        input_tokens=sum(r.usage.input_tokens for r in runs),
        output_tokens=sum(r.usage.output_tokens for r in runs),
        cached_tokens=sum(r.usage.cached_tokens for r in runs),
        cost_usd=sum(r.usage.cost_usd for r in runs),
    )
    return GetTraceResponse(
        trace_id=trace_id,
        spans=spans,
        runs=runs,
        started_ms=min(s.started_ms for s in spans),
        ended_ms=None if any(e is None for e in ends) else max(e for e in ends if e is not None),
        usage=total,
        errors=sum(1 for s in spans if s.status == "error"),
    )


async def query_task(hub: Hub, p: Principal, req: QueryTaskRequest) -> QueryTaskResponse:
    """Progress, what its run does now, and its outcome: one read, never waits."""
    task = await load_task(hub, p, req.id, req.namespace)
    found = await hub.store.row(RunRow, "SELECT * FROM runs WHERE task_id = ?", (req.id,))
    if found is None:
        return QueryTaskResponse(task=task)
    [run] = await run_views(hub, [found])
    now = None
    if found.finished_ms is None:
        [now] = await activities(hub, [found])
    return QueryTaskResponse(
        task=task, run=run, now=now, feedback=await of_run(hub.store, found.id)
    )
