"""The permissions section of x-agen/config.json: which tool calls are denied, asked or allowed."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, Tag, WithJsonSchema

from agen.bundle._base import AgenModel, Day, Duration, FieldProblem, TimeWindow, Trust, shaped

_COMPARATORS = ("lt", "lte", "gt", "gte")


def _check_args(value: dict[str, Any]) -> dict[str, Any]:
    for name, cond in value.items():
        if isinstance(cond, dict):
            bad = [k for k in cond if k not in _COMPARATORS]
            if bad or not cond:
                raise FieldProblem(
                    name,
                    "a comparison uses lt, lte, gt or gte "
                    f"(got {', '.join(bad) or 'an empty object'})",
                )
            for op, num in cond.items():
                if isinstance(num, bool) or not isinstance(num, int | float):
                    raise FieldProblem(f"{name}.{op}", f"must be a number (got {num!r})")
        elif isinstance(cond, list):
            raise FieldProblem(name, "must be a value, a glob string or a comparison object")
    return value


def _check_glob(value: str) -> str:
    """A tool-name glob fnmatch reads as the author meant: not empty, every "[" closed."""
    if not value.strip():
        raise ValueError(
            "must name a tool: a name like workspace.read_file or a glob like workspace.*"
        )
    i = 0
    while i < len(value):
        if value[i] == "[":
            close = value.find("]", i + 2 if value[i + 1 : i + 2] in ("!", "]") else i + 1)
            if close < 0:
                raise ValueError(
                    f'"{value}" opens a "[" character class at position {i + 1} that is never closed'
                )
            i = close
        i += 1
    return value


ToolGlob = Annotated[
    str,
    AfterValidator(_check_glob),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "description": "a tool name (server.tool or server_tool) or an fnmatch glob",
        }
    ),
]


class TimeCondition(AgenModel):
    """Matches only inside a daily window (UTC), optionally on some days."""

    window: TimeWindow
    days: list[Day] | None = None


class RateCondition(AgenModel):
    """Matches while fewer than ``max`` calls of the tool happened within ``per``."""

    max: int = Field(ge=1)
    per: Duration


class When(AgenModel):
    """Conditions that must all hold for a rule to apply."""

    trust: Trust | None = None
    trust_below: Trust | None = None
    args: Annotated[dict[str, Any], AfterValidator(_check_args)] | None = None
    labels: dict[str, str] | None = None
    time: TimeCondition | None = None
    rate: RateCondition | None = None


class RuleObject(AgenModel):
    """A rule with conditions: ``{"tool": "glob", "when": {...}}``."""

    tool: ToolGlob
    when: When | None = None


def _rule_shape(value: Any) -> str | None:
    if isinstance(value, str):
        return "glob"
    return "object" if isinstance(value, dict | RuleObject) else None


Rule = Annotated[
    Annotated[ToolGlob, Tag("~glob")] | Annotated[RuleObject, Tag("~object")],
    shaped(_rule_shape, ("glob", "object"), 'a tool-name glob or {"tool": glob, "when": {...}}'),
]


class Permissions(AgenModel):
    """Rules are checked deny, then ask, then allow; ``default`` decides the rest."""

    deny: list[Rule] = []
    ask: list[Rule] = []
    allow: list[Rule] = []
    default: Literal["ask", "allow", "deny"] = "ask"
    notify: str | None = None
