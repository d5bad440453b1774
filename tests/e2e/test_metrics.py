"""`GET /metrics` of a real `agen up` as Prometheus reads it: counters that only grow and
histograms in seconds (prometheus_client's own parser reads them back), and `promtool check
metrics` finds nothing to fix (required in CI, where .ci/run installs Debian's prometheus)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.harness import Up
from tests.fleet_helpers import write_bundle


def scrape(up: Up) -> str:
    r = httpx.get(
        up.url + "/metrics", headers={"Authorization": f"Bearer {up.local()['token']}"}, timeout=30
    )
    assert r.status_code == 200, r.text
    return r.text


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_metrics_are_counters_and_second_histograms_that_promtool_accepts(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    try:
        assert "agen_model_calls_total{" not in scrape(up)  # counting starts at the first scrape
        up.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
        for i in range(3):
            up.agen("run", "echo", f"hello {i}")
        first = scrape(up)
        up.agen("run", "echo", "once more")
        second = scrape(up)
    finally:
        up.stop()

    kinds = families(first)
    assert kinds["agen_model_calls"].type == "counter"  # the parser drops _total from the name
    assert kinds["agen_runs"].type == "counter"
    assert kinds["agen_model_call_duration_seconds"].type == "histogram"
    assert kinds["agen_run_duration_seconds"].type == "histogram"
    before, after = samples(first), samples(second)
    calls = (
        "agen_model_calls_total",
        (("model", "fake"), ("namespace", "default"), ("provider", "fake")),
    )
    assert before[calls] == 3 and after[calls] == 4
    runs = (
        "agen_runs_total",
        (
            ("deployment", "echo"),
            ("namespace", "default"),
            ("source", "api"),
            ("status", "succeeded"),
        ),
    )
    assert before[runs] == 3 and after[runs] == 4
    for key, value in before.items():  # counters never go down between scrapes
        if key[0].endswith(("_total", "_count", "_bucket")):
            assert after.get(key, 0) >= value, key
    inf = [
        v
        for (name, labels), v in after.items()
        if name == "agen_model_call_duration_seconds_bucket" and ("le", "+Inf") in labels
    ]
    assert inf == [4.0]
    assert "quantile" not in second and "window=" not in second and "_ms" not in second

    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("AGEN_REQUIRE_PROMTOOL") == "1":
            pytest.fail(
                "promtool is required (AGEN_REQUIRE_PROMTOOL=1): apt-get install prometheus"
            )
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    check = subprocess.run(
        [promtool, "check", "metrics"], input=second, capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0 and not check.stdout.strip() and not check.stderr.strip(), (
        check.stdout + check.stderr
    )
