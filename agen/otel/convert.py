"""Recorded spans as OpenTelemetry spans: ids, times, parents and the GenAI semantic conventions.

The input is the Store's span rows as recorded (``SpanRow``, ``attrs`` decoded), so the exporter
and ``agen trace --otlp-json`` (which builds the same rows from GetTrace) show one trace the same way. Names and attributes follow the OTel GenAI
conventions: ``chat <model>`` (gen_ai.operation.name chat), ``execute_tool <tool>``, and the run
as ``invoke_agent <deployment>``; agen's own keys keep the ``agen.`` prefix. Message contents are
added only when asked (``content``); they come from the messages table, which stores them redacted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

from agen.domain.semconv import RECORDED_BEFORE_SEMCONV, SCHEMA_URL
from agen.otel.ids import span_int, trace_int

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.sdk.trace import ReadableSpan

OPERATIONS = {"gen_ai.chat": "chat", "agen.tool": "execute_tool", "agen.run": "invoke_agent"}


def _json_object(text: str | None) -> dict[str, Any]:
    decoded = json.loads(text) if text else None
    return decoded if isinstance(decoded, dict) else {}


class SpanRow(NamedTuple):
    """One recorded span (a row of ``spans``; ``attrs`` decoded when read from the Store)."""

    id: str
    trace_id: str
    name: str
    status: str
    attrs: Annotated[dict[str, Any], _json_object]
    started_ms: int
    parent_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    namespace: str | None = None
    deployment: str | None = None
    error: str | None = None
    ended_ms: int | None = None


class RunMessage(NamedTuple):
    """What a span's content attributes read of one of its run's (redacted) messages."""

    role: str
    turn: int
    content: str | None = None
    tool_calls: str | None = None  # JSON text
    tool_call_id: str | None = None


@dataclass
class RunInfo:
    """What a run adds to each of its spans: labels, and (with content on) its messages."""

    labels: dict[str, str] = field(default_factory=dict)
    messages: Sequence[RunMessage] = field(default_factory=list)


def _value(v: Any) -> Any:
    """An OTel attribute value: a primitive, a homogeneous list of primitives, or else JSON text."""
    if isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, list | tuple) and v and all(isinstance(x, str) for x in v):
        return tuple(v)
    if (
        isinstance(v, list | tuple)
        and v
        and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    ):
        return tuple(v)
    return json.dumps(v, default=str, ensure_ascii=False)


def _parts(msg: RunMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if msg.role == "tool":  # a tool's result, as the conventions name it
        return [
            {
                "type": "tool_call_response",
                "id": msg.tool_call_id,
                "response": msg.content or "",
            }
        ]
    if msg.content:
        parts.append({"type": "text", "content": msg.content})
    calls = json.loads(msg.tool_calls) if msg.tool_calls else None
    for c in calls or []:
        parts.append(
            {
                "type": "tool_call",
                "id": c.get("id"),
                "name": c.get("name"),
                "arguments": c.get("arguments"),
            }
        )
    return parts


def _content(row: SpanRow, attrs: Mapping[str, Any], info: RunInfo) -> dict[str, Any]:
    """GenAI content attributes for one span, from the run's (redacted) messages."""
    out: dict[str, Any] = {}
    msgs = info.messages
    if row.name == "agen.run":
        first = next((m for m in msgs if m.role == "user"), None)
        if first is not None:
            out["gen_ai.input.messages"] = [{"role": "user", "parts": _parts(first)}]
        last = next((m for m in reversed(msgs) if m.role == "assistant"), None)
        if last is not None:
            out["gen_ai.output.messages"] = [{"role": "assistant", "parts": _parts(last)}]
    elif row.name == "gen_ai.chat":
        turn = attrs.get("agen.turn")
        at = next(
            (i for i, m in enumerate(msgs) if m.role == "assistant" and m.turn == turn),
            None,
        )
        # what the model was sent: the conversation up to this turn's answer (every message, for a
        # call that failed and so has none)
        sent = msgs if at is None else msgs[:at]
        out["gen_ai.input.messages"] = [
            {"role": m.role, "parts": _parts(m)} for m in sent if m.role != "system"
        ] or None
        if at is not None and row.status == "ok":
            out["gen_ai.output.messages"] = [{"role": "assistant", "parts": _parts(msgs[at])}]
    elif row.name == "agen.tool":
        call_id = attrs.get("gen_ai.tool.call.id")
        result = next((m for m in msgs if m.role == "tool" and m.tool_call_id == call_id), None)
        if result is not None:
            out["gen_ai.tool.call.result"] = result.content or ""
        for m in msgs:
            for part in _parts(m):
                if part["type"] == "tool_call" and part["id"] == call_id:
                    out["gen_ai.tool.call.arguments"] = part["arguments"]
    return out


def attributes(row: SpanRow, info: RunInfo, *, content: bool = False) -> dict[str, Any]:
    """The exported attributes of one recorded span (GenAI conventions + agen's own)."""
    attrs: dict[str, Any] = dict(row.attrs or {})
    out: dict[str, Any] = {"agen.span.name": row.name, "agen.status": row.status}
    op = OPERATIONS.get(row.name)
    if op:
        out["gen_ai.operation.name"] = op
    if row.name == "gen_ai.chat" and attrs.get("gen_ai.provider.name"):
        out["gen_ai.system"] = attrs[
            "gen_ai.provider.name"
        ]  # the older name some backends still read
    if row.name == "agen.tool" and attrs.get("agen.tool.name"):
        out["gen_ai.tool.name"] = attrs["agen.tool.name"]
    if row.name == "agen.run" and row.deployment:
        out["gen_ai.agent.name"] = row.deployment
    for key, value in (
        ("agen.namespace", row.namespace),
        ("agen.deployment", row.deployment),
        ("agen.task.id", row.task_id),
        ("agen.run.id", row.run_id),
    ):
        if value:
            out[key] = value
    out.update({f"agen.label.{k}": v for k, v in info.labels.items()})
    out.update(attrs)
    for name, recorded in RECORDED_BEFORE_SEMCONV.items():  # a span recorded by an older agen
        if recorded in out:
            out.setdefault(name, out.pop(recorded))
    if content:
        out.update(_content(row, attrs, info))
    return {k: _value(v) for k, v in out.items() if v is not None and v != [] and v != {}}


def span_name(row: SpanRow) -> str:
    attrs = row.attrs or {}
    if row.name == "gen_ai.chat":
        return f"chat {attrs.get('gen_ai.request.model') or ''}".strip()
    if row.name == "agen.tool":
        return f"execute_tool {attrs.get('agen.tool.name') or ''}".strip()
    if row.name == "agen.run":
        return f"invoke_agent {row.deployment or ''}".strip()
    return row.name


def readable_spans(
    rows: Iterable[SpanRow], runs: Mapping[str, RunInfo], *, content: bool = False
) -> list[ReadableSpan]:
    """SDK spans carrying the recorded trace/span/parent ids and start/end times of ``rows``."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    from agen import __version__

    resource = Resource.create(
        {"service.name": "agen", "service.version": __version__}, schema_url=SCHEMA_URL
    )
    scope = InstrumentationScope("agen", __version__, schema_url=SCHEMA_URL)
    sampled = TraceFlags(TraceFlags.SAMPLED)
    out: list[ReadableSpan] = []
    for row in rows:
        trace = trace_int(row.trace_id)
        ctx = SpanContext(trace, span_int(row.id), is_remote=False, trace_flags=sampled)
        parent = (
            SpanContext(trace, span_int(row.parent_id), is_remote=True, trace_flags=sampled)
            if row.parent_id
            else None
        )
        if row.status in ("error", "interrupted"):
            status = Status(StatusCode.ERROR, row.error or row.status)
        elif row.status == "ok":
            status = Status(StatusCode.OK)
        else:
            status = Status(StatusCode.UNSET)
        started = row.started_ms * 1_000_000
        ended = row.ended_ms
        out.append(
            ReadableSpan(
                name=span_name(row),
                context=ctx,
                parent=parent,
                resource=resource,
                instrumentation_scope=scope,
                attributes=attributes(row, runs.get(row.run_id or "", RunInfo()), content=content),
                kind=SpanKind.CLIENT if row.name == "gen_ai.chat" else SpanKind.INTERNAL,
                status=status,
                start_time=started,
                end_time=started if ended is None else ended * 1_000_000,
            )
        )
    return out


def export_request(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """The OTLP ExportTraceServiceRequest for these spans (the SDK's own encoder)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(spans)


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The OTLP/JSON form of the request: protobuf's JSON mapping, with the two changes OTLP/JSON
    makes to it (ids as hex, not base64; enums as integers), so collectors accept it as sent."""
    import base64

    from google.protobuf.json_format import MessageToDict

    doc: dict[str, Any] = MessageToDict(export_request(spans), use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return doc
