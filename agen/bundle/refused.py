"""Bundle fields the format names but agen does not do yet: each is refused, never accepted and ignored.

One list, read by the validator (``refused_problems``) and by the test that walks the bundle JSON
Schemas checking every field is either read by agen or listed here. A field leaves this list in
the change that makes it work.
"""

from __future__ import annotations

from typing import Any

from agen.bundle.problems import problem, show

REFUSED: dict[str, tuple[str, ...]] = {}
"""Fields (JSON paths, ``[]`` for every item of a list) refused whenever they are set. A field named
first, inside one named after it, is the one reported."""

SUPPORTED_VALUES: dict[str, dict[str, tuple[Any, ...]]] = {}
"""Fields of which only some values work: any other value is refused."""

NOT_YET = "not supported yet"


def _present(value: Any) -> bool:
    """Whether a field is set to something (null, [] and {} ask for nothing, so they pass)."""
    return value not in (None, [], {})


def _lookup(data: Any, path: str) -> list[tuple[str, Any]]:
    """(concrete path, value) for every place ``path`` names in ``data`` (``[]`` fans out)."""
    found: list[tuple[str, Any]] = [("", data)]
    for part in path.split("."):
        each = part.endswith("[]")
        key = part[:-2] if each else part
        nxt: list[tuple[str, Any]] = []
        for where, value in found:
            if not isinstance(value, dict) or key not in value:
                continue
            here = f"{where}.{key}" if where else key
            if each:
                if isinstance(value[key], list):
                    nxt += [(f"{here}[{i}]", item) for i, item in enumerate(value[key])]
            else:
                nxt.append((here, value[key]))
        found = nxt
    return found


def _nested(a: str, b: str) -> bool:
    """Whether one path is inside the other (either way round)."""
    return a.startswith((f"{b}.", f"{b}[")) or b.startswith((f"{a}.", f"{a}["))


def refused_problems(file: str, data: Any) -> list[str]:
    """A problem line for every refused field set in ``data`` (the file's parsed JSON)."""
    out: list[str] = []
    reported: list[str] = []
    for path in REFUSED.get(file, ()):
        for where, value in _lookup(data, path):
            if _present(value) and not any(_nested(where, r) for r in reported):
                reported.append(where)
                out.append(
                    problem(
                        file, where, f"{NOT_YET}: {path}; remove it (agen does not do this yet)"
                    )
                )
    for path, allowed in SUPPORTED_VALUES.get(file, {}).items():
        for where, value in _lookup(data, path):
            if value is not None and value not in allowed:
                works = ", ".join(show(a) for a in allowed)
                out.append(
                    problem(
                        file, where, f"{NOT_YET}: {path} {show(value)}; only {works} works today"
                    )
                )
    return out
