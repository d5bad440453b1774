"""The triggers section of x-agen/config.json: cron, random, webhook and event triggers."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, Tag

from agen.bundle._base import AgenModel, Day, Duration, SecretName, TimeWindow, tagged
from agen.bundle.cron import parse_schedule, zone

TriggerName = Annotated[str, Field(pattern=r"^[a-z0-9-]+$", min_length=1, max_length=63)]


def _check_schedule(value: str) -> str:
    parse_schedule(value)
    return value


def _check_zone(value: str) -> str:
    zone(value)
    return value


class CronTrigger(AgenModel):
    name: TriggerName
    type: Literal["cron"]
    schedule: Annotated[str, AfterValidator(_check_schedule)]
    input: Any = None
    catch_up: bool | None = None
    catch_up_window: Duration | None = None
    jitter: Duration | None = None
    overlap: Literal["allow", "skip", "buffer_one"] | None = None
    min_start_spacing: Duration | None = None
    labels: dict[str, str] | None = None
    conversation_key: str | None = None


class RandomTrigger(AgenModel):
    """Fires ``count`` times at random moments inside a daily window."""

    name: TriggerName
    type: Literal["random"]
    count: int = Field(ge=1)
    window: TimeWindow
    zone: Annotated[str, AfterValidator(_check_zone)] | None = None
    min_gap: Duration | None = None
    days: list[Day] | None = None
    input: Any = None


class BearerAuth(AgenModel):
    type: Literal["bearer"]


class HmacAuth(AgenModel):
    """The body is signed with a platform secret the deployment is granted."""

    type: Literal["hmac"]
    secret: SecretName
    header: str | None = None
    prefix: str | None = None
    algorithm: Literal["sha256", "sha1"] | None = None
    encoding: Literal["hex", "base64"] | None = None


WebhookAuth = Annotated[
    Annotated[BearerAuth, Tag("~bearer")] | Annotated[HmacAuth, Tag("~hmac")],
    tagged("type", ("bearer", "hmac")),
]


class WebhookTrigger(AgenModel):
    name: TriggerName
    type: Literal["webhook"]
    input: Any = None
    auth: WebhookAuth | None = None
    idempotency_header: str | None = None
    idempotency_field: str | None = None
    conversation_key: str | None = None
    labels: dict[str, str] | None = None
    trust: Literal["trusted", "untrusted"] | None = None


class EventMatch(AgenModel):
    type: list[str] = Field(min_length=1)
    labels: dict[str, str] | None = None
    count: int | None = Field(default=None, ge=1)
    within: Duration | None = None


class EventTrigger(AgenModel):
    name: TriggerName
    type: Literal["event"]
    on: EventMatch
    input: Any = None
    coalesce: Duration | None = None


Trigger = Annotated[
    Annotated[CronTrigger, Tag("~cron")]
    | Annotated[RandomTrigger, Tag("~random")]
    | Annotated[WebhookTrigger, Tag("~webhook")]
    | Annotated[EventTrigger, Tag("~event")],
    tagged("type", ("cron", "random", "webhook", "event")),
]
