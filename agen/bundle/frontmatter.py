"""Markdown files with YAML front matter (agent.md, SKILL.md)."""

from __future__ import annotations

from typing import Any

import yaml


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split ``---\\n<yaml>\\n---\\n<body>`` into (front matter, body).

    A file without a leading ``---`` line has no front matter. Raises ValueError when the
    front matter is unterminated, not YAML, or not a mapping.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return {}, text
    for i, line in enumerate(lines[1:], start=1):
        if line.rstrip() in ("---", "..."):
            raw, body = "".join(lines[1:i]), "".join(lines[i + 1 :])
            break
    else:
        raise ValueError('front matter starts with "---" but has no closing "---" line')
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" at line {where.line + 2}" if where is not None else ""
        reason = getattr(e, "problem", None) or str(e)
        raise ValueError(f"front matter is not valid YAML{at}: {reason}") from None
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        raise ValueError("front matter must be a YAML mapping (key: value lines)")
    return data, body
