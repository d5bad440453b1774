"""``agen trace <id> --otlp-json``: a trace read through the API, printed as OTLP/JSON.

The same conversion as the exporter (agen.otel.convert) from the GetTrace response, so what a
collector would receive can be looked at, diffed or replayed (``curl --data @trace.json``).
"""

from __future__ import annotations

from typing import Any

from agen.errors import InvalidError
from agen.otel.convert import RunInfo, SpanRow, otlp_json, readable_spans
from agen.wire.observe import GetTraceResponse


def trace_otlp_json(resp: GetTraceResponse) -> dict[str, Any]:
    try:
        import opentelemetry.exporter.otlp.proto.common
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        raise InvalidError(
            "--otlp-json needs the OpenTelemetry SDK; install it with: pip install 'agen[otel]'",
            field="--otlp-json",
        ) from None
    runs = {r.id: r for r in resp.runs}
    rows = []
    for s in resp.spans:
        run = runs.get(s.run_id or "")
        namespace = run.namespace if run else None
        rows.append(SpanRow(**s.model_dump(exclude={"duration_ms"}), namespace=namespace))
    infos = {r.id: RunInfo(labels=dict(r.labels)) for r in resp.runs}
    return otlp_json(readable_spans(rows, infos))
