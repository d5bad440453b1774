"""Traces out: a real `agen up` exports its recorded spans over OTLP/HTTP to a local receiver,
keeps running when the collector is gone (counting what it could not send), and joins a
caller's W3C trace."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agen.testing.server import ThreadServer
from tests.e2e.harness import Up, wait_until
from tests.fleet_helpers import write_bundle
from tests.ports import free_port

CANARY = "canary-otlp-5e1d-do-not-leak"


class Receiver:
    """An OTLP/HTTP trace receiver: decodes each ExportTraceServiceRequest with the proto types."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    async def traces(self, request: Request) -> Response:
        body = await request.body()
        msg = ExportTraceServiceRequest()
        msg.ParseFromString(body)
        with self.lock:
            self.bodies.append(body)
            self.headers.append(dict(request.headers))
            for rs in msg.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        d = MessageToDict(span)
                        d["trace_hex"], d["span_hex"] = span.trace_id.hex(), span.span_id.hex()
                        d["parent_hex"] = span.parent_span_id.hex()
                        d["attrs"] = {a.key: MessageToDict(a.value) for a in span.attributes}
                        self.spans.append(d)
        return Response(b"", media_type="application/x-protobuf")

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/traces", self.traces, methods=["POST"])])

    def of_task(self, task_id: str) -> list[dict[str, Any]]:
        with self.lock:
            return [s for s in self.spans if attr(s, "agen.task.id") == task_id]


def attr(span: dict[str, Any], key: str) -> Any:
    value = span["attrs"].get(key)
    if value is None:
        return None
    if "arrayValue" in value:
        return [next(iter(v.values())) for v in value["arrayValue"].get("values", [])]
    v = next(iter(value.values()))
    return int(v) if "intValue" in value else v


def tool_bundle(root: Path) -> Path:
    """Two turns: a report_progress tool call carrying the canary secret, then an answer with it."""
    bundle = write_bundle(
        root,
        "traced",
        script=[
            {
                "toolCalls": [
                    {"name": "report_progress", "arguments": {"message": f"halfway, key {CANARY}"}}
                ]
            },
            {"text": f"done; the key was {CANARY}"},
        ],
        config={"kind": "pool", "scale": {"min": 1, "max": 1}, "permissions": {"default": "allow"}},
    )
    (bundle / "x-agen" / "secrets.json").write_text(
        json.dumps({"secrets": {"KEY": {"source": "env", "env": "AGEN_TEST_OTLP_CANARY"}}})
    )
    return bundle


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, ThreadServer]]:
    rec = Receiver()
    with ThreadServer(rec.app()) as server:
        yield rec, server


def start_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, endpoint: str, **env: str) -> Up:
    monkeypatch.setenv("AGEN_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("AGEN_TEST_OTLP_CANARY", CANARY)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return Up(tmp_path / "home").start()


def submit(up: Up, body: dict[str, Any], headers: dict[str, str] | None = None) -> str:
    r = httpx.post(
        f"{up.url}/v1/SubmitTask",
        json=body,
        timeout=30,
        headers={"Authorization": f"Bearer {up.local()['token']}", **(headers or {})},
    )
    assert r.status_code == 200, r.text
    task_id = str(r.json()["task"]["id"])
    up.agen("wait", task_id)
    return task_id


def test_two_turn_run_with_a_tool_call_reaches_the_collector_as_one_linked_genai_trace(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    receiver: tuple[Receiver, ThreadServer],
) -> None:
    rec, server = receiver
    up = start_up(
        tmp_path,
        monkeypatch,
        server.url,
        AGEN_OTLP_CONTENT="1",
        AGEN_OTLP_HEADERS="x-api-key=sekrit-header-value",
    )
    try:
        up.agen("deploy", str(tool_bundle(tmp_path / "traced")))
        task_id = submit(up, {"deployment": "traced", "input": "go", "labels": {"team": "blue"}})
        spans = wait_until(
            lambda: (s := rec.of_task(task_id)) and len(s) >= 4 and s, what="the run's spans"
        )
        health = httpx.get(up.url + "/health").json()
        log = up.log.read_text()
    finally:
        up.stop()
    by_op: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        by_op.setdefault(attr(s, "gen_ai.operation.name"), []).append(s)
    [run] = by_op["invoke_agent"]
    chats, [tool] = by_op["chat"], by_op["execute_tool"]
    assert len(chats) == 2
    assert {s["trace_hex"] for s in spans} == {run["trace_hex"]}
    assert run["parent_hex"] == ""
    assert all(s["parent_hex"] == run["span_hex"] for s in [*chats, tool])
    assert run["name"] == "invoke_agent traced"
    for s in spans:
        assert attr(s, "agen.deployment") == "traced" and attr(s, "agen.namespace") == "default"
        assert attr(s, "agen.label.team") == "blue"
        assert int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) > 0
    for chat in chats:
        assert chat["name"] == "chat " + attr(chat, "gen_ai.request.model")
        assert attr(chat, "gen_ai.usage.cache_read.input_tokens") == 0  # the conventions' name
        assert "gen_ai.usage.cached_input_tokens" not in chat["attrs"]
        assert attr(chat, "gen_ai.provider.name") == attr(chat, "gen_ai.system") == "fake"
        assert attr(chat, "gen_ai.usage.input_tokens") > 0
        assert attr(chat, "gen_ai.usage.output_tokens") >= 0
    assert attr(tool, "gen_ai.tool.name") == "report_progress"
    assert tool["name"] == "execute_tool report_progress"
    # contents were asked for: they are there, redacted as stored; a chat span carries what the
    # model was sent (the conversation so far) as well as what it answered
    first, second = sorted(chats, key=lambda c: int(c["startTimeUnixNano"]))
    sent = json.loads(attr(first, "gen_ai.input.messages"))
    assert [m["role"] for m in sent] == ["user"] and sent[0]["parts"][0]["content"] == "go"
    again = json.loads(attr(second, "gen_ai.input.messages"))
    assert [m["role"] for m in again] == ["user", "assistant", "tool"]
    assert again[2]["parts"][0]["type"] == "tool_call_response"
    assert attr(first, "gen_ai.output.messages")
    assert "[REDACTED]" in attr(tool, "gen_ai.tool.call.arguments")
    assert "[REDACTED]" in attr(run, "gen_ai.output.messages")
    assert not any(CANARY.encode() in body for body in rec.bodies)
    # the header went to the collector, and nowhere else
    assert rec.headers[0]["x-api-key"] == "sekrit-header-value"
    assert "sekrit-header-value" not in log and "x-api-key=***" in log
    assert health["otlp"]["exported"] >= 4 and "sekrit" not in json.dumps(health)


def test_a_dead_collector_neither_fails_the_run_nor_hides_the_lost_spans(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    up = start_up(tmp_path, monkeypatch, f"http://127.0.0.1:{free_port()}", AGEN_OTLP_TIMEOUT="0.5")
    try:
        up.agen("deploy", str(tool_bundle(tmp_path / "traced")))
        task_id = submit(up, {"deployment": "traced", "input": "go"})
        assert up.http("GetTask", {"id": task_id}).json()["task"]["state"] == "succeeded"

        def lost() -> dict[str, Any] | None:
            otlp = up.http("GetMetrics", {}).json()["otlp"]
            return otlp if otlp["failed"] + otlp["dropped"] >= 4 else None

        otlp = wait_until(lost, what="the exporter to give up on the spans")
        assert otlp["exported"] == 0
        metrics = httpx.get(
            up.url + "/metrics", headers={"Authorization": f"Bearer {up.local()['token']}"}
        )
        assert metrics.status_code == 200
        assert f"agen_otlp_spans_failed_total {otlp['failed']}" in metrics.text
        assert f"agen_otlp_spans_dropped_total {otlp['dropped']}" in metrics.text
        assert httpx.get(up.url + "/metrics").status_code == 401
    finally:
        up.stop()


def test_a_task_submitted_with_a_traceparent_header_joins_the_callers_trace(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    receiver: tuple[Receiver, ThreadServer],
) -> None:
    rec, server = receiver
    trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    up = start_up(tmp_path, monkeypatch, server.url)
    try:
        up.agen("deploy", str(tool_bundle(tmp_path / "traced")))
        task_id = submit(
            up,
            {"deployment": "traced", "input": "go"},
            headers={"traceparent": f"00-{trace}-{parent}-01"},
        )
        spans = wait_until(
            lambda: (s := rec.of_task(task_id)) and len(s) >= 4 and s, what="the run's spans"
        )
        printed = json.loads(up.agen("trace", task_id, "--otlp-json").stdout)
        by_hex = up.json("trace", trace)
    finally:
        up.stop()
    [run] = [s for s in spans if attr(s, "gen_ai.operation.name") == "invoke_agent"]
    assert {s["trace_hex"] for s in spans} == {trace}
    assert run["parent_hex"] == parent
    # `agen trace --otlp-json` prints the same spans, ids as OTLP/JSON writes them (hex)
    [[printed_spans]] = [
        [ss["spans"] for ss in rs["scopeSpans"]] for rs in printed["resourceSpans"]
    ]
    [printed_run] = [s for s in printed_spans if s["name"] == "invoke_agent traced"]
    assert printed_run["traceId"] == trace and printed_run["parentSpanId"] == parent
    assert printed_run["spanId"] == run["span_hex"]
    assert {s["spanId"] for s in printed_spans} == {s["span_hex"] for s in spans}
    # the trace can be looked up by the id other tools show
    assert {s["task_id"] for s in by_hex["spans"]} == {task_id}
