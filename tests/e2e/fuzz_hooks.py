"""Schemathesis hooks for tests/e2e/test_api_fuzz.py (loaded through SCHEMATHESIS_HOOKS).

Long-poll methods (GetTask, GetLogs, ListEvents) may wait up to five minutes by design. A valid
``wait_seconds`` is shortened to at most 0.2 s so the run stays bounded; it stays valid, so every
check still applies. Out-of-range or wrongly typed values are left alone: the Hub must refuse them.

Random names and ids almost never exist, so most calls would stop at a 404. In every other
schema-valid (positive) case, the namespace, deployment and task id are pointed at the ones the
test created (FUZZ_DEPLOYMENT, FUZZ_TASK_ID; on the Gateway FUZZ_A2A_TASK_ID, a task the caller
started over A2A), so handlers run past their lookups. Negative cases are left as generated, so
what makes them invalid is never replaced.

On the Gateway a JSON-RPC error travels on HTTP 200, so a status alone cannot tell a refused call
from an accepted one: ``jsonrpc_accepts_valid_calls`` fails a schema-valid call answered with a
client error (-32700, -32600, -32602) or an internal one (-32603).
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis

SHORT_WAIT_S = 0.2
# Methods whose ``name`` is a deployment (DeleteDeployment is left out: it would delete it for the rest).
DEPLOYMENT_NAMED = {
    "GetDeployment",
    "ScaleDeployment",
    "PauseDeployment",
    "GetLogs",
    "CreateWebhookSecret",
}
TASK_ID = {
    "GetTask",
    "QueryTask",
    "GetTrace",
    "GetTranscript",
    "CancelTask",
    "PauseTask",
    "ResumeTask",
}
_calls = {"n": 0}


def _gateway_case(case: schemathesis.Case[Any], body: dict[str, Any]) -> None:
    """A positive Gateway call, pointed at the test's deployment (and task) every other time."""
    _calls["n"] += 1
    if _calls["n"] % 3 == 0:
        return
    deployment, task_id = os.environ.get("FUZZ_DEPLOYMENT"), os.environ.get("FUZZ_A2A_TASK_ID")
    if deployment and case.path_parameters is not None:
        case.path_parameters.update(ns="default", deployment=deployment)
    params = body.get("params")
    if task_id and isinstance(params, dict) and isinstance(params.get("id"), str):
        params["id"] = task_id


@schemathesis.check
def jsonrpc_accepts_valid_calls(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case[Any]
) -> bool | None:
    meta = case.meta
    if not case.operation.path.startswith("/a2a/") or meta is None:
        return None
    if meta.generation.mode.is_negative or response.status_code != 200:
        return None
    if not response.headers.get("content-type", [""])[0].startswith("application/json"):
        return None  # message/stream: server-sent events
    error = response.json().get("error") or {}
    if error.get("code") in (-32700, -32600, -32602, -32603):
        raise AssertionError(f"a schema-valid call was refused: {error}")
    return None


@schemathesis.hook
def before_call(
    context: schemathesis.HookContext, case: schemathesis.Case[Any], kwargs: dict[str, Any]
) -> None:
    body = case.body
    if not isinstance(body, dict):
        return
    wait = body.get("wait_seconds")
    if isinstance(wait, int | float) and not isinstance(wait, bool) and 0 < wait <= 300:
        body["wait_seconds"] = min(wait, SHORT_WAIT_S)
    meta = case.meta
    if meta is None or meta.generation.mode.is_negative:
        return
    if case.operation.path.startswith("/a2a/"):
        _gateway_case(case, body)
        return
    _calls["n"] += 1
    if _calls["n"] % 2:
        return
    method = case.operation.path.rsplit("/", 1)[-1]
    deployment, task_id = os.environ.get("FUZZ_DEPLOYMENT"), os.environ.get("FUZZ_TASK_ID")
    if isinstance(body.get("namespace"), str):
        body["namespace"] = "default"
    if deployment and isinstance(body.get("deployment"), str):
        body["deployment"] = deployment
    if deployment and method in DEPLOYMENT_NAMED and isinstance(body.get("name"), str):
        body["name"] = deployment
    if task_id and method in TASK_ID and isinstance(body.get("id"), str):
        body["id"] = task_id
