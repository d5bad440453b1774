"""GetMetrics in the Prometheus text exposition format (version 0.0.4), for ``GET /metrics``.

Written by hand rather than with prometheus_client: the output is a dozen gauge families
rendered from one response model, and the format's only subtle part (escaping ``\\``, ``"`` and
newlines in label values) is three replacements; a registry and collector classes would add a
dependency to mirror numbers we already have. Model, entry and edge figures cover GetMetrics'
window (labelled ``window``), so they are gauges; the OTLP span counts run since ``agen up``
started, so they are counters.
"""

from __future__ import annotations

from collections.abc import Iterable

from agen.wire.observe import GetMetricsResponse, ModelMetrics

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Sample = tuple[dict[str, str], float | int | None]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _family(name: str, kind: str, help_text: str, samples: Iterable[Sample]) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    for labels, value in samples:
        if value is None:
            continue
        text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
        lines.append(f"{name}{{{text}}} {value}" if text else f"{name} {value}")
    return lines


def exposition(resp: GetMetricsResponse, namespace: str) -> str:
    """The text a Prometheus scrape of ``/metrics?namespace=<ns>`` reads."""
    window = f"{resp.window_ms // 1000}s"
    base = {"namespace": namespace, "window": window}
    out: list[str] = []

    def model(m: ModelMetrics) -> dict[str, str]:
        return {**base, "model": m.model, "provider": m.provider or ""}

    ms = resp.models
    out += _family(
        "agen_model_calls", "gauge", "Model calls in the window.", [(model(m), m.calls) for m in ms]
    )
    out += _family(
        "agen_model_failures",
        "gauge",
        "Failed model calls in the window.",
        [(model(m), m.failures) for m in ms],
    )
    out += _family(
        "agen_model_fallbacks",
        "gauge",
        "Model calls served by a fallback model or provider.",
        [(model(m), m.fallbacks) for m in ms],
    )
    out += _family(
        "agen_model_latency_ms",
        "gauge",
        "Model call latency percentiles in the window.",
        [
            ({**model(m), "quantile": q}, v)
            for m in ms
            for q, v in (("0.5", m.p50_ms), ("0.95", m.p95_ms))
        ],
    )
    out += _family(
        "agen_model_tokens",
        "gauge",
        "Tokens used by model calls in the window.",
        [
            ({**model(m), "kind": k}, v)
            for m in ms
            for k, v in (
                ("input", m.usage.input_tokens),
                ("output", m.usage.output_tokens),
                ("cached_input", m.usage.cached_tokens),
            )
        ],
    )
    out += _family(
        "agen_model_cost_usd",
        "gauge",
        "Cost of model calls in the window (USD).",
        [(model(m), m.usage.cost_usd) for m in ms],
    )
    es = resp.entries
    out += _family(
        "agen_entry_runs",
        "gauge",
        "Top-level runs started in the window, by source.",
        [({**base, "source": e.source, "deployment": e.deployment}, e.runs) for e in es],
    )
    out += _family(
        "agen_entry_failed_runs",
        "gauge",
        "Top-level runs that failed, by source.",
        [({**base, "source": e.source, "deployment": e.deployment}, e.failed) for e in es],
    )
    out += _family(
        "agen_edge_calls",
        "gauge",
        "Agent-to-agent calls in the window.",
        [({**base, "caller": e.caller, "callee": e.callee}, e.calls) for e in resp.edges],
    )
    out += _family(
        "agen_edge_active",
        "gauge",
        "Agent-to-agent calls still running.",
        [({**base, "caller": e.caller, "callee": e.callee}, e.active) for e in resp.edges],
    )
    if resp.otlp is not None:
        o = resp.otlp
        out += _family(
            "agen_otlp_spans_exported_total",
            "counter",
            "Spans delivered to the OTLP endpoint.",
            [({}, o.exported)],
        )
        out += _family(
            "agen_otlp_spans_dropped_total",
            "counter",
            "Spans not queued: the send queue was full.",
            [({}, o.dropped)],
        )
        out += _family(
            "agen_otlp_spans_failed_total",
            "counter",
            "Spans the exporter could not deliver.",
            [({}, o.failed)],
        )
        out += _family(
            "agen_otlp_spans_queued", "gauge", "Spans waiting to be sent.", [({}, o.queued)]
        )
    return "\n".join(out) + "\n"
