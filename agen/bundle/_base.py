"""Shared building blocks for the bundle models: base classes, field types, checks.

Standard files (Agent Plugins) keep unknown fields; x-agen/ files refuse them.
JSON keys are camelCase, Python attributes snake_case.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, WithJsonSchema
from pydantic.alias_generators import to_camel

from agen.util.duration import parse_duration_ms


class FieldProblem(ValueError):
    """A validator's complaint about one sub-field (``field`` is appended to the error path)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


class StandardModel(BaseModel):
    """A model of a standard (Agent Plugins) file: unknown fields are preserved."""

    model_config = ConfigDict(
        extra="allow",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        strict=True,
        frozen=True,
        defer_build=True,  # built on first use: a command that loads no bundle pays nothing for them
    )


class AgenModel(BaseModel):
    """A model of an x-agen/ file: unknown fields are errors (a typo must not pass silently)."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        strict=True,
        frozen=True,
        defer_build=True,  # built on first use: a command that loads no bundle pays nothing for them
    )


def _check_duration(value: str) -> str:
    parse_duration_ms(value)
    return value


Duration = Annotated[
    str,
    AfterValidator(_check_duration),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": r"^[+]?(0|([0-9]*[.]?[0-9]+(ns|us|µs|μs|ms|s|m|h|d))+)$",
            "description": 'Go-style duration: "250ms", "30s", "5m", "1h30m", "720h"',
        }
    ),
]
"""A Go-style duration string, kept as written; ``agen.util.duration.parse_duration_ms`` reads it."""

_WINDOW = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-4]):([0-5]\d)$")


def _check_window(value: str) -> str:
    m = _WINDOW.match(value)
    if not m or (m.group(3) == "24" and m.group(4) != "00"):
        raise ValueError(
            f'must be "HH:MM-HH:MM" in 24-hour time, e.g. "09:00-17:30" (got "{value}")'
        )
    if value[:5] == value[6:]:
        raise ValueError(f'start and end are the same, so the window is empty (got "{value}")')
    return value


TimeWindow = Annotated[
    str,
    AfterValidator(_check_window),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": r"^([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]|24):[0-5][0-9]$",
            "description": 'daily window "HH:MM-HH:MM"; an end before the start wraps past midnight',
        }
    ),
]
"""A daily window "HH:MM-HH:MM"; an end before the start wraps past midnight."""


def window_minutes(window: str) -> tuple[int, int]:
    """Start and end of a checked window, in minutes after midnight."""
    start, end = window.split("-")
    return int(start[:2]) * 60 + int(start[3:]), int(end[:2]) * 60 + int(end[3:])


Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
Trust = Literal["operator", "trusted", "untrusted"]

_SECRET_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _check_secret_name(value: str) -> str:
    if not _SECRET_NAME.match(value):
        raise ValueError(
            f'must be a secret name like OPENAI_API_KEY: A-Z, 0-9 and _, starting with a letter (got "{value}")'
        )
    return value


SecretName = Annotated[
    str,
    AfterValidator(_check_secret_name),
    WithJsonSchema({"type": "string", "pattern": _SECRET_NAME.pattern}),
]


def _check_http_url(value: str) -> str:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f'must be an http:// or https:// URL with a host (got "{value}")')
    return value


HttpUrl = Annotated[
    str,
    AfterValidator(_check_http_url),
    WithJsonSchema(
        {"type": "string", "pattern": "^https?://", "description": "an http:// or https:// URL"}
    ),
]
"""A URL agen fetches with httpx: only http and https, with a host."""

HUB_URL_ENV = "AGEN_HUB_URL"
HUB_URL_REF = "${AGEN_HUB_URL}"
"""Where an MCP server URL names the Hub that runs the agent: agen fills in the Hub's actual URL
(``AGEN_HUB_URL``, set by ``agen up`` and ``agen nest run``) when it connects."""


def _check_mcp_url(value: str) -> str:
    if value.startswith(HUB_URL_REF):
        rest = value[len(HUB_URL_REF) :]
        if rest and not rest.startswith("/"):
            raise ValueError(
                f'{HUB_URL_REF} must be followed by a path such as /mcp (got "{value}")'
            )
        return value
    return _check_http_url(value)


McpUrl = Annotated[
    str,
    AfterValidator(_check_mcp_url),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": "^(https?://|\\$\\{AGEN_HUB_URL\\})",
            "description": "an http:// or https:// URL, or ${AGEN_HUB_URL}/<path> for the Hub running the agent",
        }
    ),
]
"""An MCP server URL: an http(s) URL, or one on the Hub that runs the agent (``${AGEN_HUB_URL}/mcp``)."""


def tagged(field: str, tags: tuple[str, ...]) -> Discriminator:
    """A union discriminator on ``field``; tags get a "~" prefix so error paths can drop them."""

    def pick(value: Any) -> str | None:
        tag = value.get(field) if isinstance(value, dict) else getattr(value, field, None)
        return f"~{tag}" if tag in tags else None

    return Discriminator(
        pick,
        # The error type carries the field and tags (an error context dict would make the
        # annotation unhashable, which breaks ``X | None``); problems.py unpacks it.
        custom_error_type=f"union_tag|{field}|{', '.join(tags)}",
        custom_error_message=f"{field} must be one of {', '.join(tags)}",
    )


def shaped(
    tags_by_shape: Callable[[Any], str | None], tags: tuple[str, ...], what: str
) -> Discriminator:
    """A union discriminator on the input's shape (string vs object, which key is present)."""

    def pick(value: Any) -> str | None:
        tag = tags_by_shape(value)
        return f"~{tag}" if tag is not None else None

    return Discriminator(
        pick,
        custom_error_type="union_shape",
        custom_error_message=f"must be {what}",
    )
