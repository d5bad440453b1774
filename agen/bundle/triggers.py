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
    name: TriggerName = Field(
        description='the trigger\'s name: lowercase letters, digits and "-", unique in the bundle'
    )
    type: Literal["cron"] = Field(description='"cron": the kind of trigger')
    schedule: Annotated[str, AfterValidator(_check_schedule)] = Field(
        description='a standard 5-field cron expression (minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5") or a descriptor (@hourly, @daily, @weekly, @every 30s), in UTC unless prefixed "CRON_TZ=<zone> "'
    )
    input: Any = Field(
        None, description="the task input each firing submits (a string, or any JSON value)"
    )
    catch_up: bool | None = Field(
        None,
        description="fire the latest window missed while no Hub was running once, when the Hub is back (default: missed windows are only recorded as missed)",
    )
    catch_up_window: Duration | None = Field(
        None,
        description="with catchUp: a missed window older than this is not caught up (a duration, e.g. 6h)",
    )
    jitter: Duration | None = Field(
        None,
        description="fire at a deterministic moment up to this long after each window is due, to spread load (a duration)",
    )
    overlap: Literal["allow", "skip", "buffer_one"] | None = Field(
        None,
        description="while an earlier firing's task is unfinished: allow (default) fires anyway, skip records the window skipped, buffer_one queues one firing behind the running one and skips the rest",
    )
    min_start_spacing: Duration | None = Field(
        None,
        description="skip a window due less than this long after the previous firing (a duration)",
    )
    labels: dict[str, str] | None = Field(
        None, description="labels put on every task this trigger submits"
    )
    conversation_key: str | None = Field(
        None,
        description="continue one conversation across firings (each task sees the earlier ones' messages)",
    )


class RandomTrigger(AgenModel):
    """Fires ``count`` times at random moments inside a daily window."""

    name: TriggerName = Field(
        description='the trigger\'s name: lowercase letters, digits and "-", unique in the bundle'
    )
    type: Literal["random"] = Field(description='"random": the kind of trigger')
    count: int = Field(ge=1, description="how many times a day it fires")
    window: TimeWindow = Field(
        description='the daily window the random times fall in, "HH:MM-HH:MM" in zone'
    )
    zone: Annotated[str, AfterValidator(_check_zone)] | None = Field(
        None, description="an IANA time zone for window and days, e.g. Europe/Paris (default UTC)"
    )
    min_gap: Duration | None = Field(
        None, description="at least this long between two planned times (a duration)"
    )
    days: list[Day] | None = Field(
        None, description='the days it fires on, e.g. ["mon", "tue"] (default every day)'
    )
    input: Any = Field(None, description="the task input each firing submits")


class BearerAuth(AgenModel):
    type: Literal["bearer"] = Field(
        description='"bearer": the caller sends Authorization: Bearer <the trigger\'s secret from `agen webhook-secret`>'
    )


class HmacAuth(AgenModel):
    """The body is signed with a platform secret the deployment is granted.

    ``scheme: body`` (the default) signs the raw body; ``timestamped`` signs ``<t>.<body>`` and sends
    ``t=<unix seconds>,v1=<hex>`` (header X-Agen-Signature unless ``header`` says otherwise), so a
    delivery older than ``tolerance`` (default 5m) is refused and one replayed inside it is a duplicate.
    """

    type: Literal["hmac"] = Field(description='"hmac": the body is signed with a shared secret')
    secret: SecretName = Field(description="the platform secret the body is signed with")
    header: str | None = Field(
        None, description="the header carrying the signature (default X-Agen-Signature)"
    )
    prefix: str | None = Field(
        None, description='text before the signature in the header, e.g. "sha256=" (GitHub)'
    )
    algorithm: Literal["sha256", "sha1"] | None = Field(
        None, description="the HMAC hash (default sha256)"
    )
    encoding: Literal["hex", "base64"] | None = Field(
        None, description="how the signature is written (default hex)"
    )
    scheme: Literal["body", "timestamped"] | None = Field(
        None,
        description='body: sign the raw body; timestamped: sign "<t>.<body>" and refuse old deliveries',
    )
    tolerance: Duration | None = Field(
        None, description="scheme timestamped: how old a delivery may be (default 5m)"
    )

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
    name: TriggerName = Field(
        description="the trigger's name; deliveries go to POST /hooks/<namespace>/<deployment>/<name>"
    )
    type: Literal["webhook"] = Field(description='"webhook": the kind of trigger')
    input: Any = Field(None, description="the task input; unset: the delivered body")
    auth: WebhookAuth | None = Field(
        None,
        description="how a delivery proves it may submit: bearer (the trigger's secret, from `agen webhook-secret`) or hmac (a signed body)",
    )
    idempotency_header: str | None = Field(
        None, description="a request header whose value makes a redelivery the same task"
    )
    idempotency_field: str | None = Field(
        None, description="a JSON field of the body whose value makes a redelivery the same task"
    )
    conversation_key: str | None = Field(
        None, description="continue one conversation across deliveries"
    )
    labels: dict[str, str] | None = Field(
        None, description="labels put on every task this trigger submits"
    )
    trust: Literal["trusted", "untrusted"] | None = Field(
        None,
        description="the trust of the tasks it submits (default untrusted: webhook bodies come from outside)",
    )


class EventMatch(AgenModel):
    type: list[str] = Field(
        min_length=1,
        description='event types to match; a prefix ending in "." matches every type under it (task. matches task.failed)',
    )
    labels: dict[str, str] | None = Field(None, description="only events carrying these labels")
    count: int | None = Field(
        default=None, ge=1, description='fire only after this many matching events within "within"'
    )
    within: Duration | None = Field(None, description="the window count is counted in (a duration)")


class EventTrigger(AgenModel):
    name: TriggerName = Field(
        description='the trigger\'s name: lowercase letters, digits and "-", unique in the bundle'
    )
    type: Literal["event"] = Field(description='"event": the kind of trigger')
    on: EventMatch = Field(
        description="which events of the Hub's event log (`agen events`) fire it"
    )
    input: Any = Field(None, description="the task input; unset: the matching event as JSON")
    coalesce: Duration | None = Field(
        None,
        description="events matching within this long of a firing join it instead of firing again (a duration)",
    )


Trigger: TypeAlias = Annotated[
    Annotated[CronTrigger, Tag("~cron")]
    | Annotated[RandomTrigger, Tag("~random")]
    | Annotated[WebhookTrigger, Tag("~webhook")]
    | Annotated[EventTrigger, Tag("~event")],
    tagged("type", ("cron", "random", "webhook", "event")),
]
