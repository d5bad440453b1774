"""The triggers section of x-agen/config.json: cron, random, webhook and event triggers."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import AfterValidator, Field, Tag, model_validator

from agen.bundle._base import AgenModel, Day, Duration, FieldProblem, SecretName, TimeWindow, tagged
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
    """The body is signed with a platform secret the deployment is granted.

    ``scheme: body`` (the default) signs the raw body; ``timestamped`` signs ``<t>.<body>`` and sends
    ``t=<unix seconds>,v1=<hex>`` (header X-Agen-Signature unless ``header`` says otherwise), so a
    delivery older than ``tolerance`` (default 5m) is refused and one replayed inside it is a duplicate.
    """

    type: Literal["hmac"]
    secret: SecretName
    header: str | None = None
    prefix: str | None = None
    algorithm: Literal["sha256", "sha1"] | None = None
    encoding: Literal["hex", "base64"] | None = None
    scheme: Literal["body", "timestamped"] | None = None
    tolerance: Duration | None = None

    @model_validator(mode="after")
    def _timestamped_fields(self) -> HmacAuth:
        if self.scheme == "timestamped":
            if self.prefix is not None:
                raise FieldProblem(
                    "prefix", 'not used by scheme timestamped (its header is "t=...,v1=...")'
                )
            if self.encoding == "base64":
                raise FieldProblem("encoding", "scheme timestamped signs in hex only")
        elif self.tolerance is not None:
            raise FieldProblem(
                "tolerance", 'only scheme "timestamped" has a timestamp to check; set scheme'
            )
        return self


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


Trigger: TypeAlias = Annotated[
    Annotated[CronTrigger, Tag("~cron")]
    | Annotated[RandomTrigger, Tag("~random")]
    | Annotated[WebhookTrigger, Tag("~webhook")]
    | Annotated[EventTrigger, Tag("~event")],
    tagged("type", ("cron", "random", "webhook", "event")),
]
