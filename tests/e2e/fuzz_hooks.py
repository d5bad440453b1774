"""Schemathesis hooks for tests/e2e/test_api_fuzz.py (loaded through SCHEMATHESIS_HOOKS).

Long-poll methods (GetTask, GetLogs, ListEvents) may wait up to five minutes by design. A valid
``wait_seconds`` is shortened to at most 0.2 s so the run stays bounded; it stays valid, so every
check still applies. Out-of-range or wrongly typed values are left alone: the Hub must refuse them.

Random names and ids almost never exist, so most calls would stop at a 404. In every other
schema-valid (positive) case, the namespace, deployment and task id are pointed at the ones the
test created (FUZZ_DEPLOYMENT, FUZZ_TASK_ID), so handlers run past their lookups. Negative cases are
left as generated, so what makes them invalid is never replaced.
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
