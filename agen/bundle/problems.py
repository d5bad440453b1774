"""Turn pydantic validation errors into problem lines: ``<file>: <field.path>: <reason>``.

Paths use the file's own (camelCase) names and list indices (``triggers[1].schedule``), so a
user can find the spot without knowing anything about the Python models.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from agen.bundle._base import FieldProblem

_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "none_required": "null",
}

_BOUNDS = {
    "greater_than_equal": ("≥", "ge"),
    "greater_than": (">", "gt"),
    "less_than_equal": ("≤", "le"),
    "less_than": ("<", "lt"),
}


def problem(file: str, path: str, reason: str) -> str:
    return f"{file}: {path or '(file)'}: {reason}"


def show(value: Any) -> str:
    """A value as the user wrote it in JSON."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def join_path(loc: Sequence[int | str]) -> str:
    """('triggers', 1, '~cron', 'schedule') -> 'triggers[1].schedule' (union tags dropped)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("~") or part == "[key]":
            continue
        else:
            out += f".{part}" if out else part
    return out


def _reason(err: ErrorDetails) -> tuple[str, str]:
    """The reason text and any extra path to append."""
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return "required", ""
    if kind == "extra_forbidden":
        return "unknown field", ""
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("' or '", "', '").replace("'", "")
        return f"must be one of {expected} (got {show(value)})", ""
    if kind in _BOUNDS:
        sign, key = _BOUNDS[kind]
        return f"must be {sign} {ctx.get(key)} (got {show(value)})", ""
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]} (got {json_kind(value)})", ""
    if kind == "string_too_short":
        return "must not be empty" if ctx.get("min_length") == 1 else str(err["msg"]), ""
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s)", ""
    if kind == "string_pattern_mismatch":
        return f"must match {ctx.get('pattern')} (got {show(value)})", ""
    if kind.startswith("union_tag|"):
        _, field, tags = kind.split("|")
        if isinstance(value, dict) and field in value:
            return f"must be one of {tags} (got {show(value[field])})", field
        if isinstance(value, dict):
            return f"required (one of {tags})", field
        return f"must be an object (got {json_kind(value)})", ""
    if kind == "union_shape":
        return f"{err['msg']} (got {json_kind(value)})", ""
    if kind in ("value_error", "assertion_error"):
        exc = ctx.get("error")
        if isinstance(exc, FieldProblem):
            return exc.reason, exc.field
        return str(exc) if exc is not None else str(err["msg"]), ""
    msg = str(err["msg"])
    return (msg[:1].lower() + msg[1:]), ""


def problems_from(file: str, error: ValidationError, prefix: str = "") -> list[str]:
    """Every error of a pydantic ValidationError as a problem line of ``file``."""
    lines: list[str] = []
    for err in error.errors():
        reason, extra = _reason(err)
        path = join_path([p for p in (prefix,) if p] + list(err["loc"]))
        if extra:
            if extra.startswith("["):
                path = f"{path}{extra}"
            else:
                path = f"{path}.{extra}" if path else extra
        line = problem(file, path, reason)
        if line not in lines:
            lines.append(line)
    return lines
