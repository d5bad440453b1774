"""Schemathesis hooks for tests/e2e/test_api_fuzz.py (loaded through SCHEMATHESIS_HOOKS).

Long-poll methods (GetTask, GetLogs, ListEvents) may wait up to five minutes by design. A valid
``wait_seconds`` is shortened to at most 0.2 s so the run stays bounded; it stays valid, so every
check still applies. Out-of-range or wrongly typed values are left alone: the Hub must refuse them.
"""

from __future__ import annotations

from typing import Any

import schemathesis

SHORT_WAIT_S = 0.2


@schemathesis.hook
def before_call(context: schemathesis.HookContext, case: schemathesis.Case, kwargs: dict[str, Any]) -> None:
    body = case.body
    if isinstance(body, dict):
        wait = body.get("wait_seconds")
        if isinstance(wait, int | float) and not isinstance(wait, bool) and 0 < wait <= 300:
            body["wait_seconds"] = min(wait, SHORT_WAIT_S)
