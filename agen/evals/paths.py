"""A tiny JSON path for scenario checks: ``$``, ``.key`` and ``[index]`` steps."""

from __future__ import annotations

import re
from typing import Any

_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def json_path(data: Any, path: str) -> tuple[bool, Any]:
    """(found, value) of ``path`` in ``data``."""
    value = data
    for key, index in _STEP.findall(path[1:]):
        if key:
            if not isinstance(value, dict) or key not in value:
                return False, None
            value = value[key]
        else:
            i = int(index)
            if not isinstance(value, list) or i >= len(value):
                return False, None
            value = value[i]
    return True, value
