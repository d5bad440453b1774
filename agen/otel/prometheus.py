"""``GET /metrics`` in the Prometheus text exposition format (version 0.0.4).

Counters (``_total``) run since the Hub began counting and histograms are in seconds, per the
Prometheus naming guide, so ``rate()``, ``increase()`` and ``histogram_quantile()`` work; the
figures come from agen.hub.events.counters. (GetMetrics' one-hour window and percentiles are the
TUI's, not Prometheus's.)

Written by hand rather than with prometheus_client: a few counter and histogram families rendered
from counters we already keep, and the format's one subtle part (escaping ``\\``, ``"`` and newlines
in label values) is three replacements. The tests read it back with prometheus_client's parser and
CI runs ``promtool check metrics`` over it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agen.hub.events.counters import FleetTotals, Histogram
    from agen.wire.observe import OtlpStats

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Labels = dict[str, str]
Sample = tuple[Labels, float | int]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _line(name: str, labels: Labels, value: float | int) -> str:
    text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    shown = repr(float(value)) if isinstance(value, float) else str(value)
    return f"{name}{{{text}}} {shown}" if text else f"{name} {shown}"


def _family(name: str, kind: str, help_text: str, samples: Iterable[Sample]) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    lines += [_line(name, labels, value) for labels, value in samples]
    return lines


def _histogram(name: str, help_text: str, series: Iterable[tuple[Labels, Histogram]]) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
    for labels, h in series:
        lines += [_line(f"{name}_bucket", {**labels, "le": le}, n) for le, n in h.cumulative()]
        lines.append(_line(f"{name}_sum", labels, float(h.sum)))
        lines.append(_line(f"{name}_count", labels, h.count))
    return lines


def exposition(totals: FleetTotals, namespace: str, otlp: OtlpStats | None) -> str:
    """What a scrape of ``/metrics?namespace=<ns>`` reads."""
    models = sorted((k, v) for k, v in totals.models.items() if k[0] == namespace)
    runs = sorted((k, v) for k, v in totals.runs.items() if k[0] == namespace)
    edges = sorted((k, v) for k, v in totals.edges.items() if k[0] == namespace)

    def model(key: tuple[str, str, str]) -> Labels:
        return {"namespace": key[0], "model": key[1], "provider": key[2]}

    def run(key: tuple[str, str, str]) -> Labels:
        return {"namespace": key[0], "deployment": key[1], "source": key[2]}

    out: list[str] = []
    out += _family(
        "agen_model_calls_total",
        "counter",
        "Model calls of the runs that ended.",
        [(model(k), m.calls) for k, m in models],
    )
    out += _family(
        "agen_model_call_failures_total",
        "counter",
        "Model calls that failed.",
        [(model(k), m.failures) for k, m in models],
    )
    out += _family(
        "agen_model_fallbacks_total",
        "counter",
        "Model calls served by a fallback model or provider.",
        [(model(k), m.fallbacks) for k, m in models],
    )
    out += _family(
        "agen_model_tokens_total",
        "counter",
        "Tokens of model calls, by kind (cache_read: input tokens read from the provider's cache).",
        [
            ({**model(k), "kind": kind}, n)
            for k, m in models
            for kind, n in (
                ("input", m.input_tokens),
                ("output", m.output_tokens),
                ("cache_read", m.cache_read_tokens),
            )
        ],
    )
    out += _family(
        "agen_model_cost_usd_total",
        "counter",
        "Cost of model calls (USD).",
        [(model(k), round(m.cost_usd, 6)) for k, m in models],
    )
    out += _histogram(
        "agen_model_call_duration_seconds",
        "Model call latency.",
        [(model(k), m.seconds) for k, m in models],
    )
    out += _family(
        "agen_runs_total",
        "counter",
        "Runs that ended, by status.",
        [({**run(k), "status": st}, n) for k, r in runs for st, n in sorted(r.by_status.items())],
    )
    out += _histogram(
        "agen_run_duration_seconds",
        "How long runs took, start to end.",
        [(run(k), r.seconds) for k, r in runs],
    )
    out += _family(
        "agen_agent_calls_total",
        "counter",
        "Runs started by another agent's run (delegation, A2A), by caller and callee.",
        [({"namespace": k[0], "caller": k[1], "callee": k[2]}, n) for k, n in edges],
    )
    if otlp is not None:
        out += _family(
            "agen_otlp_spans_exported_total",
            "counter",
            "Spans delivered to the OTLP endpoint.",
            [({}, otlp.exported)],
        )
        out += _family(
            "agen_otlp_spans_dropped_total",
            "counter",
            "Spans not queued: the send queue was full.",
            [({}, otlp.dropped)],
        )
        out += _family(
            "agen_otlp_spans_failed_total",
            "counter",
            "Spans the exporter could not deliver.",
            [({}, otlp.failed)],
        )
        out += _family(
            "agen_otlp_spans_queued", "gauge", "Spans waiting to be sent.", [({}, otlp.queued)]
        )
    return "\n".join(out) + "\n"
