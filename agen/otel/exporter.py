"""The OTLP exporter of ``agen up``: follows finished runs in the Store and sends their spans.

It never touches a run: runners write spans to the Store as always, and this task reads a run's
spans once its ``run.finished`` event commits (a cursor over the events table, started at the
current end), and the spans a ``run.spans`` event names (a stopped run's calls, added after the
Hub ended it). Spans go into a bounded queue; a sender drains it in batches through the SDK's
OTLP/HTTP exporter (its encoder, retries and timeout) on a worker thread. A slow or dead collector
therefore only makes the queue fill: what does not fit is counted ``dropped``, what the exporter
could not deliver ``failed``, and both show in GetMetrics, ``agen metrics``, /health and /metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from agen.otel.config import OtlpConfig
from agen.otel.convert import RunInfo, RunMessage, SpanRow, readable_spans
from agen.store import Store, event_log, loads
from agen.store.records import columns

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger("agen.otel")
FOLLOW_BATCH = 100  # finished runs read per step


class _RunEvent(NamedTuple):
    """A run.finished or run.spans event: which run to export (and, run.spans, which spans)."""

    seq: int
    type: str
    run_id: str | None
    data: str | None  # JSON text


@dataclass
class ExportStats:
    """Span counts since ``agen up`` started; queued is what waits to be sent now."""

    endpoint: str
    exported: int = 0
    dropped: int = 0
    failed: int = 0
    queued: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class SpanExport:
    def __init__(
        self, store: Store, config: OtlpConfig, exporter: SpanExporter | None = None
    ) -> None:
        self.store = store
        self.config = config
        self.stats = ExportStats(endpoint=config.describe())
        self.queue: asyncio.Queue[ReadableSpan] = asyncio.Queue(maxsize=config.queue_size)
        self._exporter = exporter
        self._tasks: list[asyncio.Task[None]] = []
        self._after = 0  # the last event seq followed

    def snapshot(self) -> dict[str, Any]:
        self.stats.queued = self.queue.qsize()
        return self.stats.to_dict()

    async def start(self) -> None:
        if self._exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            self._exporter = OTLPSpanExporter(
                endpoint=self.config.endpoint,
                headers=self.config.headers,
                timeout=self.config.timeout_s,
            )
        self._after = int(await self.store.scalar(event_log.head_sql(self.store.dialect)) or 0)
        self._tasks = [
            asyncio.create_task(self._follow(), name="otlp-follow"),
            asyncio.create_task(self._send(), name="otlp-send"),
        ]

    async def stop(self, timeout_s: float | None = None) -> None:
        """Stop following (after one last look: runs that ended while draining are sent too); give what
        is queued one last chance to go (bounded), count the rest failed."""
        follow, send = self._tasks or (None, None)
        if follow is not None:
            follow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follow
            with contextlib.suppress(Exception):
                await self._step()
        if send is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.queue.join(), timeout_s if timeout_s is not None else self.config.timeout_s
                )
            send.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await send
        self.stats.failed += self.queue.qsize()
        if self._exporter is not None:
            await asyncio.to_thread(self._exporter.shutdown)

    async def _follow(self) -> None:
        while True:
            if await self._step() < FOLLOW_BATCH:
                await self.store.wait_for_events(self._after, 1.0)

    async def _step(self) -> int:
        """Queue the spans of the next runs that finished; how many runs were read.

        Reads up to the head (agen.store.event_log); when fewer than a batch matched, every event up to it
        was examined and the cursor moves to it, so waiting for the next event does not return at once."""
        dialect = self.store.dialect
        top = int(await self.store.scalar(event_log.head_sql(dialect)) or 0)
        if top in (0, self._after):
            return 0
        since, params = event_log.after(dialect, self._after)
        until, more = event_log.upto(dialect, top)
        rows = await self.store.rows(
            _RunEvent,
            f"SELECT {columns(_RunEvent)} FROM events WHERE {since} AND {until}"
            " AND type IN ('run.finished', 'run.spans')"
            f" ORDER BY {event_log.order(dialect)} LIMIT ?",
            (*params, *more, FOLLOW_BATCH),
        )
        for row in rows:
            try:
                if row.type == "run.spans":  # added to a run the Hub ended (agen/runner/records.py)
                    only = [str(i) for i in loads(row.data, {}).get("spans", [])]
                    await self._enqueue_run(str(row.run_id), only)
                else:
                    await self._enqueue_run(str(row.run_id))
            except Exception:  # a bad row must not stop export; the log keeps it
                log.exception("OTLP export: cannot read run %s", row.run_id)
            self._after = int(row.seq)
        if len(rows) < FOLLOW_BATCH:
            self._after = top
        return len(rows)

    async def _enqueue_run(self, run_id: str, only: list[str] | None = None) -> None:
        """Queue the run's ended spans (``only``: just these, spans added after it ended)."""
        spans = await self.store.rows(
            SpanRow,
            f"SELECT {columns(SpanRow)} FROM spans WHERE run_id = ? AND ended_ms IS NOT NULL"
            " ORDER BY started_ms",
            (run_id,),
        )
        if only is not None:
            spans = [s for s in spans if s.id in only]
        labels = await self.store.scalar("SELECT labels FROM runs WHERE id = ?", (run_id,))
        info = RunInfo(labels=loads(labels, {}) if labels is not None else {})
        if self.config.content:
            info.messages = await self.store.rows(
                RunMessage,
                f"SELECT {columns(RunMessage)} FROM messages WHERE run_id = ? ORDER BY seq",
                (run_id,),
            )
        for span in readable_spans(spans, {run_id: info}, content=self.config.content):
            try:
                self.queue.put_nowait(span)
            except asyncio.QueueFull:
                self.stats.dropped += 1

    async def _send(self) -> None:
        from opentelemetry.sdk.trace.export import SpanExportResult

        assert self._exporter is not None
        while True:
            batch = [await self.queue.get()]
            while len(batch) < self.config.batch_size and not self.queue.empty():
                batch.append(self.queue.get_nowait())
            try:
                result = await asyncio.to_thread(self._export, batch)
            except Exception:  # an exporter bug must not end export: count and go on
                log.exception("OTLP export to %s failed", self.config.describe())
                result = SpanExportResult.FAILURE
            if result == SpanExportResult.SUCCESS:
                self.stats.exported += len(batch)
            else:
                self.stats.failed += len(batch)
            for _ in batch:
                self.queue.task_done()

    def _export(self, batch: Sequence[ReadableSpan]) -> Any:
        assert self._exporter is not None
        return self._exporter.export(batch)


async def start_export(store: Store, config: OtlpConfig | None = None) -> SpanExport | None:
    """The running exporter when AGEN_OTLP_ENDPOINT is set (InvalidError for a bad configuration)."""
    config = config or OtlpConfig.from_env()
    if config is None:
        return None
    try:
        import opentelemetry.exporter.otlp.proto.http  # noqa: F401
    except ImportError:
        from agen.errors import InvalidError

        raise InvalidError(
            "AGEN_OTLP_ENDPOINT is set but the OpenTelemetry exporter is not installed; "
            "install it with: pip install 'agen[otel]'",
            field="AGEN_OTLP_ENDPOINT",
        ) from None
    export = SpanExport(store, config)
    await export.start()
    return export
