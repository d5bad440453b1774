"""docs/bundle-reference.md describes every bundle field: each one's schema carries a description."""

from __future__ import annotations

import json
from typing import Any

from agen.bundle.schemas import SCHEMAS, render


def _undescribed(node: Any, where: str) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        for name, prop in (node.get("properties") or {}).items():
            if not (isinstance(prop, dict) and prop.get("description")):
                out.append(f"{where}.{name}")
        for key, value in node.items():
            out += _undescribed(value, f"{where}.{key}" if key != "properties" else where)
    elif isinstance(node, list):
        for item in node:
            out += _undescribed(item, where)
    return out


def test_every_bundle_field_has_a_description_in_the_reference() -> None:
    missing = [m for name in SCHEMAS for m in _undescribed(json.loads(render(name)), name)]
    assert missing == []


def test_the_reference_explains_cron_syntax_catch_up_overlap_and_permission_globs() -> None:
    config = render("config")
    assert "5-field cron expression" in config and "CRON_TZ" in config
    assert "missed while no Hub was running" in config  # catchUp
    assert "buffer_one queues one firing" in config  # overlap
    assert "workspace.*" in config  # permission patterns
