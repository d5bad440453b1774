"""Reading a JSON request body strictly, for every door that takes one (the HTTP API, the Gateway).

Python's json module accepts what JSON does not (NaN, Infinity, a float past the double range read
as infinity) and keeps lone UTF-16 surrogates that no UTF-8 store can hold; these helpers refuse
them so a bad body is the caller's error, never a failure deeper in.
"""

from __future__ import annotations

import json
import math
from typing import Any

from agen.errors import InvalidError


def _no_constant(name: str) -> Any:
    raise InvalidError(f"{name} is not a JSON number; send a finite number")


def _number(text: str) -> int | float:
    """A JSON number with a fraction or exponent: 116.0 is the integer 116 (as JSON Schema reads
    it), and one too large for a float is refused rather than read as infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise InvalidError(f"{text[:40]} is too large a number; send a finite number")
    return int(value) if value.is_integer() else value


def strict_loads(text: str) -> Any:
    """``json.loads`` refusing NaN, Infinity and out-of-range floats (InvalidError); a syntax error is
    json.JSONDecodeError and a document nested past the parser's depth RecursionError, as usual."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_number)


def lone_surrogate(payload: Any) -> str | None:
    """The path of the first string (key or value) holding a lone surrogate, which no UTF-8 store
    can keep; walked without recursion, so a deep document cannot exhaust the stack."""
    stack: list[tuple[str, Any]] = [("", payload)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return path or "(body)"
        elif isinstance(value, dict):
            for key, item in value.items():
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return f"{path}.(key)" if path else "(key)"
                stack.append((f"{path}.{key}" if path else key, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
    return None
