"""Counters and histograms for ``GET /metrics``, as Prometheus expects them: monotonic totals since
this Hub began counting, and latencies in seconds in cumulative buckets, so ``rate()``,
``increase()`` and ``histogram_quantile()`` work.

They are fed by the event log, not by the runners (which write to the Store directly, from any
Nest): each ``run.finished`` event after the cursor adds its run (status, duration, tokens, cost)
and its model calls (the run's ``gen_ai.chat`` spans: model, provider, failures, fallbacks,
latency). A run is therefore counted once, when it ends; a long run's calls appear at its end.
The cursor starts at the head of the log on the first scrape (counters start at zero, as a
process's do), so a Hub never re-counts history and a restart is a counter reset. Several Hubs on
one database each count the whole fleet: scrape one, or aggregate with ``max``.

GetMetrics' windowed figures (the last hour, percentiles) stay what the TUI shows.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agen.domain import columns
from agen.domain.semconv import CACHE_READ, RECORDED_BEFORE_SEMCONV
from agen.hub.events.log import EventFilter, log_head, read_events
from agen.store import Store, loads

MODEL_SECONDS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Bucket bounds of a model call's latency (seconds): a cached short answer to a long generation."""
RUN_SECONDS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0)
"""Bucket bounds of a run's duration (seconds): a one-turn answer to a day-long task."""
_CHUNK = 500
_REMEMBERED = 10_000  # run ids already counted (a run finished twice is counted once)


@dataclass
class Histogram:
    """Observations in fixed buckets: ``counts[i]`` holds those ≤ ``bounds[i]`` and above the bound
    before; the last slot those above every bound (+Inf)."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    sum: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        self.counts = self.counts or [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, count)`` pairs as Prometheus writes them, +Inf last."""
        out, running = [], 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += n
            out.append(("+Inf" if bound == float("inf") else f"{bound:g}", running))
        return out


@dataclass
class ModelTotals:
    calls: int = 0
    failures: int = 0
    fallbacks: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0
    seconds: Histogram = field(default_factory=lambda: Histogram(MODEL_SECONDS))


@dataclass
class RunTotals:
    by_status: dict[str, int] = field(default_factory=dict)
    seconds: Histogram = field(default_factory=lambda: Histogram(RUN_SECONDS))


ModelKey = tuple[str, str, str]
"""(namespace, model, provider)."""
RunKey = tuple[str, str, str]
"""(namespace, deployment, source)."""
EdgeKey = tuple[str, str, str]
"""(namespace, caller deployment, callee deployment)."""


@dataclass
class FleetTotals:
    """What /metrics shows: totals by model, by deployment and by caller and callee."""

    models: dict[ModelKey, ModelTotals] = field(default_factory=dict)
    runs: dict[RunKey, RunTotals] = field(default_factory=dict)
    edges: dict[EdgeKey, int] = field(default_factory=dict)


class _FinishedRun(NamedTuple):
    """A finished run as the totals count it; ``caller``: the parent run's deployment."""

    id: str
    namespace: str
    deployment: str
    source: str
    status: str
    started_ms: int
    finished_ms: int | None
    caller: str | None


class _ChatSpan(NamedTuple):
    """A run's model call (a ``gen_ai.chat`` span)."""

    run_id: str
    status: str
    attrs: str  # JSON text
    started_ms: int
    ended_ms: int | None


class FleetCounters:
    """The totals one Hub has counted since its first scrape (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.cursor: int | None = None
        self.totals = FleetTotals()
        self._counted: OrderedDict[str, None] = OrderedDict()
        self._lock = asyncio.Lock()

    async def catch_up(self) -> None:
        """Count every run that finished since the last call (one scrape at a time)."""
        async with self._lock:
            if self.cursor is None:
                self.cursor = await log_head(self.store)
                return
            finished = EventFilter(types=("run.finished",))
            while True:
                page = await read_events(
                    self.store, [], after=self.cursor, flt=finished, limit=_CHUNK
                )
                ids = [str(e["run_id"]) for e in page.events if e.get("run_id")]
                await self._count([i for i in dict.fromkeys(ids) if i not in self._counted])
                self.cursor = page.cursor
                if len(page.events) < _CHUNK:
                    return

    async def _count(self, run_ids: list[str]) -> None:
        if not run_ids:
            return
        marks = ",".join("?" * len(run_ids))
        runs = await self.store.rows(
            _FinishedRun,
            "SELECT r.id, r.namespace, r.deployment, r.source, r.status, r.started_ms,"
            " r.finished_ms, p.deployment AS caller FROM runs r"
            f" LEFT JOIN runs p ON p.id = r.parent_run_id WHERE r.id IN ({marks})",
            run_ids,
        )
        spans = await self.store.rows(
            _ChatSpan,
            f"SELECT {columns(_ChatSpan, 's')} FROM spans s"
            f" WHERE s.run_id IN ({marks}) AND s.name = 'gen_ai.chat'",
            run_ids,
        )
        namespace = {r.id: r.namespace for r in runs}
        for r in runs:
            self._remember(r.id)
            totals = self.totals.runs.setdefault((r.namespace, r.deployment, r.source), RunTotals())
            totals.by_status[r.status] = totals.by_status.get(r.status, 0) + 1
            if r.finished_ms is not None:
                totals.seconds.observe(max(0, r.finished_ms - r.started_ms) / 1000)
            if r.caller is not None:
                edge = (r.namespace, r.caller, r.deployment)
                self.totals.edges[edge] = self.totals.edges.get(edge, 0) + 1
        for s in spans:
            self._add_call(namespace.get(s.run_id, "?"), s)

    def _add_call(self, namespace: str, span: _ChatSpan) -> None:
        a: dict[str, Any] = loads(span.attrs, {}) or {}
        model = str(a.get("gen_ai.response.model") or a.get("gen_ai.request.model") or "?")
        m = self.totals.models.setdefault(
            (namespace, model, str(a.get("gen_ai.provider.name") or "")), ModelTotals()
        )
        m.calls += 1
        m.failures += span.status == "error"
        m.fallbacks += bool(a.get("agen.fallback") or a.get("agen.fallback_provider"))
        m.input_tokens += int(a.get("gen_ai.usage.input_tokens") or 0)
        m.output_tokens += int(a.get("gen_ai.usage.output_tokens") or 0)
        m.cache_read_tokens += int(
            a.get(CACHE_READ) or a.get(RECORDED_BEFORE_SEMCONV[CACHE_READ]) or 0
        )
        m.cost_usd += float(a.get("agen.cost_usd") or 0.0)
        latency = a.get("agen.latency_ms")
        if latency is None and span.ended_ms is not None:
            latency = span.ended_ms - span.started_ms
        if latency is not None:
            m.seconds.observe(max(0, int(latency)) / 1000)

    def _remember(self, run_id: str) -> None:
        self._counted[run_id] = None
        while len(self._counted) > _REMEMBERED:
            self._counted.popitem(last=False)
