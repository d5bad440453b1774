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
        raise ValueError("must name a tool: a name like workspace.read or a glob like workspace.*")
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

    window: TimeWindow = Field(description='"HH:MM-HH:MM", UTC')
    days: list[Day] | None = Field(None, description='only on these days, e.g. ["sat", "sun"]')


class RateCondition(AgenModel):
    """Matches while fewer than ``max`` calls of the tool happened within ``per``."""

    max: int = Field(ge=1, description="calls allowed within per")
    per: Duration = Field(description="the sliding window (a duration)")


class When(AgenModel):
    """Conditions that must all hold for a rule to apply."""

    trust: Trust | None = Field(
        None, description="only for tasks of exactly this trust (operator, trusted or untrusted)"
    )
    trust_below: Trust | None = Field(None, description="only for tasks less trusted than this")
    args: Annotated[dict[str, Any], AfterValidator(_check_args)] | None = Field(
        None,
        description='only when the call\'s arguments match: a value, an fnmatch glob for strings, or {"lt"|"lte"|"gt"|"gte": number}',
    )
    labels: dict[str, str] | None = Field(None, description="only for tasks carrying these labels")
    time: TimeCondition | None = Field(None, description="only inside a daily time window")
    rate: RateCondition | None = Field(
        None, description="only while the tool was called fewer than max times within per"
    )


class RuleObject(AgenModel):
    """A rule with conditions: ``{"tool": "glob", "when": {...}}``."""

    tool: ToolGlob = Field(description="a tool name or glob, as in a plain rule")
    when: When | None = Field(
        None, description="conditions that must all hold for the rule to apply"
    )


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

    deny: list[Rule] = Field(
        [],
        description='rules whose tool calls are refused; a rule is a tool name ("workspace.run", or "workspace_run" as the model calls it), an fnmatch glob ("workspace.*", "*.delete_*"), or {"tool": glob, "when": {...}}',
    )
    ask: list[Rule] = Field(
        [],
        description="rules whose tool calls wait for a person: `agen approvals`, then `agen approve` or `agen deny`",
    )
    allow: list[Rule] = Field([], description="rules whose tool calls run without asking")
    default: Literal["ask", "allow", "deny"] = Field(
        "ask", description="what a tool call no rule matches does"
    )
    notify: str | None = Field(
        None,
        description="a notification target (`agen notify set`) told about each approval request",
    )
