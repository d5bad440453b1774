"""GetMetrics: per served model calls, failures, fallbacks, latency and usage; entries by source;
call edges between agents; and a per-deployment throughput series for sparklines.

Everything is read from runs started in the window (the ``runs_namespace_started`` index)
and their spans (``spans_run``); the run set is capped so a huge window stays bounded.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, NamedTuple

from agen.domain import columns
from agen.domain.semconv import CACHE_READ, RECORDED_BEFORE_SEMCONV
from agen.hub.auth import Principal
from agen.hub.service import Hub
from agen.store import loads
from agen.store.records import Count
from agen.wire.observe import (
    EdgeMetrics,
    EntryMetrics,
    GetMetricsRequest,
    GetMetricsResponse,
    ModelMetrics,
    OtlpStats,
    Usage,
)

MAX_RUNS = 20_000
CHUNK = 900


def percentile(values: list[int], pct: float) -> int | None:
    """Nearest-rank percentile (what p50/p95 mean in the seeds' views)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


async def throughput(
    hub: Hub, namespace: str, window_ms: int, buckets: int
) -> dict[str, list[int]]:
    """Runs started per bucket per deployment, oldest bucket first (one grouped, indexed read)."""
    now = hub.clock()
    start = now - window_ms
    size = max(1, window_ms // buckets)
    rows = await hub.store.rows(
        _Started,
        "SELECT deployment, (started_ms - ?) / ? AS b, COUNT(*) AS n FROM runs"
        " WHERE namespace = ? AND started_ms >= ? GROUP BY deployment, b",
        (start, size, namespace, start),
    )
    out: dict[str, list[int]] = {}
    for r in rows:
        series = out.setdefault(r.deployment, [0] * buckets)
        series[min(buckets - 1, r.b)] += r.n
    return out


class _Started(NamedTuple):
    """How many of a deployment's runs started in bucket ``b``."""

    deployment: str
    b: Count  # a computed integer
    n: Count


class _Call(NamedTuple):
    """A model call (a ``gen_ai.chat`` span)."""

    status: str
    attrs: str  # JSON text
    started_ms: int
    ended_ms: int | None


class _WindowRun(NamedTuple):
    """A run started in the window, as the entries and edges count it."""

    id: str
    deployment: str
    source: str
    parent_run_id: str | None
    status: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: float
    started_ms: int
    finished_ms: int | None


async def _model_metrics(hub: Hub, run_ids: list[str]) -> list[ModelMetrics]:
    stats: dict[tuple[str, str | None], dict[str, Any]] = {}
    for i in range(0, len(run_ids), CHUNK):
        part = run_ids[i : i + CHUNK]
        spans = await hub.store.rows(
            _Call,
            f"SELECT {columns(_Call)} FROM spans WHERE run_id IN ({','.join('?' * len(part))})"
            " AND name = 'gen_ai.chat'",
            part,
        )
        for s in spans:
            a = loads(s.attrs, {}) or {}
            model = str(a.get("gen_ai.response.model") or a.get("gen_ai.request.model") or "?")
            st = stats.setdefault(
                (model, a.get("gen_ai.provider.name")),
                {
                    "calls": 0,
                    "failures": 0,
                    "fallbacks": 0,
                    "lat": [],
                    "in": 0,
                    "out": 0,
                    "cached": 0,
                    "usd": 0.0,
                },
            )
            st["calls"] += 1
            st["failures"] += s.status == "error"
            st["fallbacks"] += bool(a.get("agen.fallback") or a.get("agen.fallback_provider"))
            latency = a.get("agen.latency_ms")
            if latency is None and s.ended_ms is not None:
                latency = s.ended_ms - s.started_ms
            if latency is not None:
                st["lat"].append(int(latency))
            st["in"] += int(a.get("gen_ai.usage.input_tokens") or 0)
            st["out"] += int(a.get("gen_ai.usage.output_tokens") or 0)
            st["cached"] += int(
                a.get(CACHE_READ) or a.get(RECORDED_BEFORE_SEMCONV.get(CACHE_READ, "")) or 0
            )
            st["usd"] += float(a.get("agen.cost_usd") or 0.0)
    return [
        ModelMetrics(
            model=model,
            provider=provider,
            calls=st["calls"],
            failures=st["failures"],
            fallbacks=st["fallbacks"],
            p50_ms=percentile(st["lat"], 50),
            p95_ms=percentile(st["lat"], 95),
            usage=Usage(
                input_tokens=st["in"],
                output_tokens=st["out"],
                cached_tokens=st["cached"],
                cost_usd=round(st["usd"], 6),
            ),
        )
        for (model, provider), st in sorted(stats.items(), key=lambda kv: -kv[1]["calls"])
    ]


async def get_metrics(hub: Hub, p: Principal, req: GetMetricsRequest) -> GetMetricsResponse:
    p.require_namespace(req.namespace)
    if req.throughput_only:
        return GetMetricsResponse(
            window_ms=req.window_ms,
            models=[],
            entries=[],
            edges=[],
            throughput=await throughput(hub, req.namespace, req.window_ms, req.buckets),
        )
    since = hub.clock() - req.window_ms
    runs = await hub.store.rows(
        _WindowRun,
        f"SELECT {columns(_WindowRun)} FROM runs WHERE namespace = ? AND started_ms >= ?"
        " ORDER BY started_ms DESC LIMIT ?",
        (req.namespace, since, MAX_RUNS),
    )
    entries: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"runs": 0, "failed": 0, "in": 0, "out": 0, "cached": 0, "usd": 0.0}
    )
    by_id = {r.id: r for r in runs}
    edges: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"calls": 0, "active": 0, "ms": []}
    )
    for r in runs:
        if r.parent_run_id is None:
            e = entries[(r.source, r.deployment)]
            e["runs"] += 1
            e["failed"] += r.status == "failed"
            e["in"] += r.input_tokens
            e["out"] += r.output_tokens
            e["cached"] += r.cached_tokens
            e["usd"] += r.cost_usd
        else:
            parent = by_id.get(r.parent_run_id)
            caller = parent.deployment if parent else "?"
            edge = edges[(caller, r.deployment)]
            edge["calls"] += 1
            if r.finished_ms is None:
                edge["active"] += 1
            else:
                edge["ms"].append(r.finished_ms - r.started_ms)
    return GetMetricsResponse(
        window_ms=req.window_ms,
        models=await _model_metrics(hub, [r.id for r in runs]),
        entries=[
            EntryMetrics(
                source=src,
                deployment=dep,
                runs=e["runs"],
                failed=e["failed"],
                usage=Usage(
                    input_tokens=e["in"],
                    output_tokens=e["out"],
                    cached_tokens=e["cached"],
                    cost_usd=round(e["usd"], 6),
                ),
            )
            for (src, dep), e in sorted(entries.items())
        ],
        edges=[
            EdgeMetrics(
                caller=c,
                callee=d,
                calls=e["calls"],
                active=e["active"],
                p95_ms=percentile(e["ms"], 95),
            )
            for (c, d), e in sorted(edges.items())
        ],
        throughput=await throughput(hub, req.namespace, req.window_ms, req.buckets),
        otlp=OtlpStats(**hub.otlp_stats()) if hub.otlp_stats else None,
    )
