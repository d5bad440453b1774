"""W3C traceparent in (webhook header → task → leased task → run span) and the OTLP settings'
secrets kept out of what agen prints."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from agen.api.hooks import hook_routes
from agen.bundle.config import Config
from agen.domain import LeasedTaskRow, TaskRow
from agen.errors import InvalidError
from agen.hub.events.counters import FleetTotals, ModelTotals
from agen.hub.rpc.nests import leased_task
from agen.hub.service import Hub
from agen.hub.triggers.tick import sync_triggers
from agen.hub.triggers.webhook import create_webhook_secret
from agen.nest.executor import run_request
from agen.otel.config import OtlpConfig
from agen.otel.ids import span_hex, trace_hex, traceparent
from agen.otel.prometheus import exposition
from agen.runner.records import open_run
from agen.store import SQLiteStore
from agen.store.records import read
from agen.testing.server import ThreadServer
from agen.wire.observe import OtlpStats
from tests.unit.trigger_helpers import deployment

TRACE, PARENT = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"


@pytest.fixture
async def hook(tmp_path: Path) -> AsyncIterator[tuple[SQLiteStore, str, str]]:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    dep = await deployment(store, "triage")
    triggers = [{"name": "gh", "type": "webhook", "input": "Triage:"}]
    await store.write(
        lambda tx: sync_triggers(tx, dep, Config.model_validate({"triggers": triggers}))
    )
    secret = await store.write(lambda tx: create_webhook_secret(tx, "default", "triage", "gh"))
    app = Starlette(routes=hook_routes(Hub(store), lambda ns, name: None))
    async with ThreadServer(app) as srv:
        yield store, srv.url + "/hooks/default/triage/gh", secret
    await store.close()


async def test_a_webhook_traceparent_makes_the_run_a_child_of_the_callers_span(
    hook: tuple[SQLiteStore, str, str],
) -> None:
    store, url, secret = hook
    async with httpx.AsyncClient() as c:
        r = await c.post(
            url,
            content=b"{}",
            headers={"Authorization": f"Bearer {secret}", "traceparent": f"00-{TRACE}-{PARENT}-01"},
        )
        assert r.status_code == 202, r.text
        ignored = await c.post(
            url,
            content=b"{}",
            headers={
                "Authorization": f"Bearer {secret}",
                "Idempotency-Key": "2",
                "traceparent": "garbage",
            },
        )
        assert (
            ignored.status_code == 202
        )  # W3C: an invalid traceparent is ignored, the run starts a trace
    rows = {r["id"]: r for r in await store.all("SELECT * FROM tasks")}
    task = rows[r.json()["task_id"]]
    assert task["traceparent"] == f"00-{TRACE}-{PARENT}-01"
    assert rows[ignored.json()["task_id"]]["traceparent"] is None

    req = run_request(leased_task(LeasedTaskRow(read(TaskRow, task), "l1"), started=False))
    opened = await store.write(lambda tx: open_run(tx, req, "owner", "fake", None))
    span = await store.one("SELECT * FROM spans WHERE id = ?", (opened.run.span_id,))
    assert (
        span is not None
        and trace_hex(span["trace_id"]) == TRACE
        and span_hex(span["parent_id"]) == PARENT
    )
    # what tools are handed continues the same trace, under the run's span
    assert traceparent(span["trace_id"], span["id"]) == f"00-{TRACE}-{span_hex(span['id'])}-01"


def test_submit_task_refuses_a_traceparent_field_that_is_not_w3c() -> None:
    from agen.wire.tasks import SubmitTaskRequest

    ok = SubmitTaskRequest.model_validate(
        {"deployment": "d", "input": "x", "traceparent": f"00-{TRACE}-{PARENT}-01"}
    )
    assert ok.traceparent is not None
    for bad in (
        f"00-{'0' * 32}-{PARENT}-01",
        f"ff-{TRACE}-{PARENT}-01",
        f"00-{TRACE.upper()}-{PARENT}-01",
    ):
        with pytest.raises(ValueError, match="traceparent"):
            SubmitTaskRequest.model_validate({"deployment": "d", "input": "x", "traceparent": bad})


def test_otlp_header_values_never_show_in_what_agen_prints() -> None:
    config = OtlpConfig.from_env(
        {
            "AGEN_OTLP_ENDPOINT": "https://cloud.langfuse.com/api/public/otel",
            "AGEN_OTLP_HEADERS": "Authorization=Basic%20cGs6c2s=,x-langfuse-ingestion-version=4",
        }
    )
    assert config is not None
    assert config.endpoint == "https://cloud.langfuse.com/api/public/otel/v1/traces"
    assert config.headers["Authorization"] == "Basic cGs6c2s="
    assert "cGs6c2s" not in config.describe() and "cGs6c2s" not in repr(config)
    assert "Authorization=***" in config.describe()
    with pytest.raises(InvalidError, match="AGEN_OTLP_HEADERS") as e:
        OtlpConfig.from_env(
            {"AGEN_OTLP_ENDPOINT": "http://127.0.0.1:4318", "AGEN_OTLP_HEADERS": "sekrit-token"}
        )
    assert "sekrit" not in str(e.value)
    with pytest.raises(InvalidError, match="AGEN_OTLP_ENDPOINT"):
        OtlpConfig.from_env({"AGEN_OTLP_ENDPOINT": "127.0.0.1:4318"})
    assert OtlpConfig.from_env({}) is None


def test_metrics_exposition_is_prometheus_text_with_escaped_labels_and_cumulative_buckets() -> None:
    totals = FleetTotals()
    calls = ModelTotals(calls=3, failures=1, input_tokens=10, output_tokens=2)
    for seconds in (0.05, 0.3, 700.0):
        calls.seconds.observe(seconds)
    totals.models[("default", 'we"ird\\model\n', "fake")] = calls
    totals.models[("other", "hidden", "fake")] = ModelTotals(calls=9)
    text = exposition(totals, "default", OtlpStats(endpoint="x", exported=7, dropped=1, failed=2))
    assert (
        'agen_model_calls_total{namespace="default",model="we\\"ird\\\\model\\n",provider="fake"} 3'
        in text
    )
    assert "hidden" not in text  # another namespace's figures are not this scrape's
    assert 'le="0.1"} 1' in text and 'le="0.5"} 2' in text and 'le="+Inf"} 3' in text
    assert "# TYPE agen_model_call_duration_seconds histogram" in text
    assert (
        "# TYPE agen_otlp_spans_failed_total counter" in text
        and "agen_otlp_spans_failed_total 2" in text
    )
