"""Wire models for triggers, webhooks secrets, provider holds, the event log, notification
targets and admission dry runs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agen.wire.common import NAME_PATTERN, Count, Model

Severity = Literal["info", "warning", "critical"]


class ListTriggerEventsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    deployment: str = Field(min_length=1)
    trigger: str | None = None
    limit: int = Field(50, ge=1, le=1000)


class TriggerEvent(Model):
    id: str
    trigger_name: str
    status: Literal["fired", "missed", "skipped", "rejected"]
    due_ms: int | None = None
    task_id: str | None = None
    reason: str | None = None
    created_ms: int
    count: int = 1
    """How many calls this row stands for: rejected webhook calls are counted per trigger per minute."""


class TriggerInfo(Model):
    name: str
    type: str
    active_since_ms: int
    next_due_at: int | None = None
    last_due_at: int | None = None


class ListTriggerEventsResponse(Model):
    triggers: list[TriggerInfo] = []
    events: list[TriggerEvent] = []


class CreateWebhookSecretRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    deployment: str = Field(min_length=1)
    trigger: str = Field(min_length=1)


class CreateWebhookSecretResponse(Model):
    secret: str
    url_path: str


class ProviderHold(Model):
    account: str
    namespace: str
    provider: str
    reason: str
    held_since_ms: int
    retry_at_ms: int
    backoff_ms: int
    probe_task_id: str | None = None
    resumed_ms: int | None = None


class ListProviderHoldsRequest(Model):
    namespace: str | None = Field(None, pattern=NAME_PATTERN)


class ListProviderHoldsResponse(Model):
    holds: list[ProviderHold] = []


class ResumeProviderRequest(Model):
    account: str = Field(min_length=1)


class ResumeProviderResponse(Model):
    hold: ProviderHold


class ListEventsRequest(Model):
    """Events after ``after``; ``wait_seconds`` waits for the first matching one."""

    namespace: str | None = Field(None, pattern=NAME_PATTERN)
    deployment: str | None = None
    after: Count = 0
    types: list[str] = []
    labels: dict[str, str] = {}
    severity: Severity | None = None
    limit: int = Field(50, ge=1, le=1000)
    wait_seconds: float = Field(0, ge=0, le=300)
    last: int | None = Field(
        None, ge=1, le=1000, description="start at the newest N events instead of after"
    )


class Event(Model):
    seq: int
    id: str
    namespace: str
    type: str
    severity: Severity
    deployment: str | None = None
    task_id: str | None = None
    run_id: str | None = None
    labels: dict[str, str] = {}
    data: dict[str, Any] = {}
    dedupe_key: str | None = None
    created_ms: int


class ListEventsResponse(Model):
    events: list[Event] = []
    cursor: int


class NotifyTarget(Model):
    name: str
    namespace: str
    url: str
    events: list[str] = []
    deployment: str | None = None
    labels: dict[str, str] = {}
    severity: Severity | None = None
    secret: str | None = None
    cursor_seq: int = 0
    paused_until_ms: int | None = None
    last_error: str | None = None
    delivered: int = 0
    dropped: int = 0


class SetNotifyTargetRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    name: str = Field(pattern=NAME_PATTERN)
    url: str = Field(
        json_schema_extra={"pattern": "^https?://"}
    )  # checked (with its message) by the Hub
    events: list[str] = []
    deployment: str | None = None
    labels: dict[str, str] = {}
    severity: Severity | None = None
    secret: str | None = None


class NotifyTargetRef(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    name: str


class NotifyTargetResponse(Model):
    target: NotifyTarget


class ListNotifyTargetsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)


class ListNotifyTargetsResponse(Model):
    targets: list[NotifyTarget] = []


class AdmissionCheck(Model):
    stage: str
    ok: bool
    reason: str = ""
    retry_after_s: int | None = None


class DryRunTaskResponse(Model):
    admitted: bool
    stage: str | None = None
    reason: str = ""
    retry_after_s: int | None = None
    checks: list[AdmissionCheck] = []
