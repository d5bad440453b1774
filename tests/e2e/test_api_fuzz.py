"""Schemathesis against a real `agen up`: every generated request, valid or not, gets a 4xx or 2xx
in the documented shape; no 5xx, and no check (`--checks all`) fails, for an admin and a viewer;
every schema-valid request is accepted (``positive_data_acceptance``) unless the exception below says
why it cannot be. The same over the A2A Gateway's JSON-RPC door (its own /openapi.json).

Bounded and deterministic: 25 examples per operation, deterministic generation, one worker.
Excluded: ``Shutdown`` only, since it stops the Hub under test (who may call it has its own
test in tests/integration/test_api_bad_requests.py). Check configuration, with the reason for each:

* ``positive_data_acceptance`` also accepts 400 for CreateDeployment and UpdateDeployment: a
  bundle's files must form a valid bundle (plugin.json, harness, prompt, config), which the loader
  checks and JSON Schema cannot express; the 400 lists every problem.
* the same for ScaleDeployment: ``replicas`` above the deployment's own ``scale.max`` (set in its
  bundle, not in the schema) is a 400 naming that limit.
* ResolveId also accepts 400 for a schema-valid call: a short id that matches several stored ids is
  ambiguous (the 400 lists them), which depends on what is stored, not on the request's shape.
* the Nest-facing RPCs (scope ``nest``) also accept 409 for a schema-valid call: a made-up lease id on
  a real task is fenced (409), as a stale lease is; an unknown Nest, task or definition is a 404.
* SubmitTask and DryRunTask also accept 400: a not_after_ms already in the past, or not after
  not_before_ms, is a 400 by the clock, which JSON Schema cannot express (the stateful phase met it
  once). Both also accept 503 (and only 503 of the 5xx): once the fuzz has called PauseDeployment
  on its deployment, a task for it is refused as unavailable at stage paused (`agen start` resumes
  it), which is the deployment's state, not the request's fault; a 500 is still a failure.
  SetMemory and RollbackMemory: a value longer than the block's stored limit (set by an earlier
  call) is a 400, and a stale expected_version a 409; both depend on what is stored.
* CancelTask has no 400 exemption: its one rule between fields (grace_period_seconds with mode
  graceful only) is in its schema.

The Gateway answers JSON-RPC errors on HTTP 200, so for it ``negative_data_rejection`` (a 4xx for
a schema-invalid call) does not apply; ``jsonrpc_accepts_valid_calls`` (fuzz_hooks.py) checks the
error codes instead: a schema-valid call is never answered -32700, -32600, -32602 or -32603.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.harness import Up, wait_until
from tests.fleet_helpers import write_bundle

HERE = Path(__file__).parent
SCHEMATHESIS = str(Path(sys.executable).with_name("schemathesis"))
CONFIG = """\
[generation]
max-examples = 25
deterministic = true
database = "none"

[[operations]]
include-operation-id = ["CreateDeployment", "UpdateDeployment", "ScaleDeployment"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429"]

[[operations]]
include-operation-id = ["SetMemory", "RollbackMemory"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409"]

[[operations]]
include-operation-id = ["ResolveId"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404"]
[[operations]]
include-operation-id = ["SubmitTask", "DryRunTask"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "503"]
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]

[[operations]]
include-operation-id = ["CancelTask"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "429"]

[[operations]]
include-operation-id = ["ReportNest", "LeaseTasks", "MarkRunning", "CompleteTask", "ReleaseTask", "SuspendTask",
                        "GetDefinitionFiles"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409"]
"""
GATEWAY_CONFIG = """\
[generation]
max-examples = 30
deterministic = true
database = "none"
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Up, str]]:
    """A Hub with one deployment and one finished task, so fuzzed calls can reach real rows."""
    root = tmp_path_factory.mktemp("fuzz")
    up = Up(root / "home").start()
    up.agen("deploy", str(write_bundle(root / "bundle", "fuzz")))
    task = up.http("SubmitTask", {"deployment": "fuzz", "input": "hello"}).json()["task"]
    wait_until(
        lambda: up.http("GetTask", {"id": task["id"]}).json()["task"]["state"] == "succeeded",
        what="the seed task to finish",
    )
    yield up, str(task["id"])
    up.stop()


def schemathesis_run(
    schema: str, token: str, config: str, tmp_path: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "schemathesis.toml").write_text(config)
    return subprocess.run(
        [
            SCHEMATHESIS,
            "--config-file",
            str(tmp_path / "schemathesis.toml"),
            "run",
            schema,
            *args,
            "-H",
            f"Authorization: Bearer {token}",
            "--workers",
            "1",
            "--request-timeout",
            "10",
            "--no-color",
            "--report-dir",
            str(tmp_path / "report"),
        ],
        cwd=tmp_path,
        env={
            **os.environ,
            "SCHEMATHESIS_HOOKS": str(HERE / "fuzz_hooks.py"),
            "NO_COLOR": "1",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=600,
    )


def token_for(hub: Up, scope: str) -> str:
    if scope == "admin":
        return str(hub.local()["token"])
    if scope == "nest":  # the Nest calls answer only a Nest's credential: enrol one, as a Nest does
        join = hub.http("CreateJoinToken", {}).json()["token"]
        r = httpx.post(
            f"{hub.url}/v1/EnrolNest",
            json={"name": "fuzz-nest"},
            headers={"Authorization": f"Bearer {join}"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        return str(r.json()["token"])
    r = hub.http("CreateToken", {"scopes": [scope], "name": f"fuzz-{scope}"})
    assert r.status_code == 200, r.text
    return str(r.json()["token"])


@pytest.mark.parametrize("scope", ["admin", "viewer", "nest"])
def test_fuzzed_requests_get_no_server_error_and_pass_every_check(
    hub: tuple[Up, str], scope: str, tmp_path: Path
) -> None:
    up, task_id = hub
    r = schemathesis_run(
        f"{up.url}/openapi.json",
        token_for(up, scope),
        CONFIG,
        tmp_path,
        "--checks",
        "all",
        "--exclude-operation-id",
        "Shutdown",
        FUZZ_DEPLOYMENT="fuzz",
        FUZZ_TASK_ID=task_id,
    )
    assert r.returncode == 0, (
        f"schemathesis ({scope} token) found problems:\n{r.stdout[-20000:]}\n{r.stderr[-2000:]}"
    )
    assert up.proc is not None and up.proc.poll() is None  # the Hub is still up after the run
    log = up.log.read_text()
    assert "Traceback" not in log, f"the Hub logged a traceback during the fuzz run:\n{log[-5000:]}"


def test_fuzzed_a2a_calls_get_no_server_error_and_valid_ones_are_accepted(
    hub: tuple[Up, str], tmp_path: Path
) -> None:
    up, _ = hub
    root = tmp_path / "a2a-bundle"
    up.agen("deploy", str(write_bundle(root, "fuzz-a2a")))  # its own: the API fuzz may pause "fuzz"
    gateway = up.wait_gateway()
    token = token_for(up, "admin")
    seed = httpx.post(
        f"{gateway}/a2a/default/fuzz-a2a",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    "role": "user",
                    "messageId": "seed",
                    "parts": [{"kind": "text", "text": "hi"}],
                }
            },
        },
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert seed.status_code == 200 and "result" in seed.json(), seed.text
    before = up.log.read_text()
    r = schemathesis_run(
        f"{gateway}/openapi.json",
        token,
        GATEWAY_CONFIG,
        tmp_path,
        "--checks",
        "all",
        "--exclude-checks",
        "negative_data_rejection",
        FUZZ_DEPLOYMENT="fuzz-a2a",
        FUZZ_A2A_TASK_ID=str(seed.json()["result"]["id"]),
    )
    assert r.returncode == 0, (
        f"schemathesis (Gateway) found problems:\n{r.stdout[-20000:]}\n{r.stderr[-2000:]}"
    )
    assert up.proc is not None and up.proc.poll() is None
    log = up.log.read_text()[len(before) :]
    assert "Traceback" not in log, (
        f"the Gateway logged a traceback during the fuzz run:\n{log[-5000:]}"
    )
