"""Canonical JSON: the one text of a value whose bytes depend on its content alone, for what is
hashed, signed or compared (an approval's arguments, an idempotent call's effect key, a repeated
tool call, a notification's signed body, a call token's payload).

Keys sorted, no spaces, non-ASCII escaped (the same bytes whatever encoding carries the text), and a
value JSON has no type for (a datetime, a UUID) written as its ``str``.
"""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON text (see the module's docstring)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
