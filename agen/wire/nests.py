"""The Nest-facing RPCs (scope ``nest``): what a Nest's Manager and instances ask of the Hub.

These are the whole contract between a Nest and the Hub (DESIGN.md §1): the same models run
in-process (validated once at construction) and over HTTP (JSON, definition files as base64),
so the Nest imports these and nothing from ``agen.hub``. ``Assignment``, ``InstanceReport``,
``LeasedTask`` and ``LeaseRef`` are the domain shapes both sides pass around.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from pydantic import Base64Bytes, ConfigDict, Field, StrictInt

from agen.domain.attachments import Attachment
from agen.domain.live import LiveEvent
from agen.wire.common import NAME_PATTERN, Count, DurationMs, Model, TimeMs

Id = Annotated[str, Field(min_length=1, max_length=100)]
HttpUrlText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=2_000,
        pattern=r"^https?://[^\s/\x00-\x1f\x7f]+[^\s\x00-\x1f\x7f]*$",
    ),
]
NEST_LOST_AFTER_MS = 30_000
"""nest_lost_after (seed 000 §5), one value for both sides: the Hub's leader marks a Nest it has not
heard from for this long lost and places its instances elsewhere; a Nest that has not reached the Hub
for this long stops its singletons, so the two copies never run side by side."""
MAX_LEASES = 2_000
"""Leases per ExtendLeases call (the port sends more in several calls): bounds that keep the longest
valid request under the API's body cap."""
InstanceState = Literal["starting", "ready", "busy", "draining", "stopped", "failed"]
CompleteStatus = Literal["succeeded", "failed", "cancelled"]
START_FAILED = "start failed: "  # exit_reason prefix of an instance whose executor could not start


class Assignment(Model):
    """What one Nest should run of one deployment, with what it needs to run it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deployment_id: str
    namespace: str
    deployment: str
    definition_id: str
    digest: str
    count: int
    max_concurrency: int
    paused: bool
    kind: str = "pool"  # task: each instance leases exactly one task, then stops


class InstanceReport(Model):
    """One instance as its Nest sees it, sent with every heartbeat."""

    id: Id
    deployment_id: Id
    digest: str = Field(max_length=100)
    state: InstanceState
    in_flight: Count = 0
    exit_reason: str | None = (
        None  # unbounded but for the body cap: a host's stderr tail may be long
    )


class LeaseRef(Model):
    """A task and the lease id this Nest holds on it: the fencing token every report presents."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: Id
    lease_id: Id


class LeasedTask(Model):
    """A task this Nest holds a lease on; ``lease_id`` is the fencing token every report presents."""

    id: str
    lease_id: str
    namespace: str
    deployment: str
    deployment_id: str
    input: str
    attachments: list[Attachment] = Field(default_factory=list)  # files given with the input
    attempts: int = 0
    conversation_key: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    trust: str = "trusted"
    source: str = "api"
    model_tier: str | None = None
    overrides: dict[str, Any] | None = None
    budget_pressure: bool = False
    root_run_id: str | None = None
    parent_run_id: str | None = None  # a child task: the run that delegated it
    submitted_by: str | None = None
    requested_by: str | None = None
    """Whom the run records as its requester (runs.requested_by; its approvals name them): the
    submitter, or for a task in a delegation tree the root run's requester."""
    locks: dict[str, int] = Field(default_factory=dict)
    traceparent: str | None = None  # W3C, from the submitter: the run joins that trace
    started: bool = False  # leased straight into running (no separate mark_running)
    depth: int = 0  # its place in a delegation tree (root = 0)

    @property
    def ref(self) -> LeaseRef:
        # validated: pydantic-core checks two strings faster than model_construct's Python copies them
        return LeaseRef(task_id=self.id, lease_id=self.lease_id)


class TokenKey(Model):
    """A public key call tokens verify against (seed 000 §10)."""

    algorithm: Literal["Ed25519"] = "Ed25519"
    id: str = Field("", description="the key id tokens name (kid)")
    public_key: str = Field(description="the raw 32-byte public key, base64")


class GetTokenKeysResponse(Model):
    keys: list[TokenKey]


class RegisterNestRequest(Model):
    """Enrol (or re-enrol, by name) a Nest; a re-enrolled Nest's old instances and leases end."""

    name: str = Field(min_length=1, max_length=200)
    capacity: Count = 8
    labels: dict[str, str] = Field(default_factory=dict)
    gateway_url: HttpUrlText | None = None
    """This Nest's A2A Gateway as callers reach it (``agen nest run --gateway-url``); ResolveAgent
    lists it for the deployments assigned here. None: the Nest runs no Gateway."""


class RegisterNestResponse(Model):
    nest_id: str


class ReportNestRequest(Model):
    """A heartbeat: this Nest's instances now."""

    nest_id: Id
    instances: list[InstanceReport] = Field(default_factory=list, max_length=1_000)
    saturated: list[Id] = Field(default_factory=list, max_length=1_000)
    """Deployments whose A2A callers wait at this Nest's Gateway while every ready instance of
    theirs here is full and none is starting (seed 000 §5): the autoscaler adds one instance."""


class ReportNestResponse(Model):
    assignments: list[Assignment]


class GetDefinitionFilesRequest(Model):
    definition_id: Id


class GetDefinitionFilesResponse(Model):
    """A definition's bundle files (base64 in JSON), checked against its digest."""

    files: dict[str, Base64Bytes]


class LeaseTasksRequest(Model):
    """Lease up to ``limit`` queued tasks of a deployment for one instance (nothing while the Hub drains)."""

    nest_id: Id
    instance_id: Id
    deployment_id: Id
    limit: Count
    lease_ms: DurationMs


class LeaseTasksResponse(Model):
    tasks: list[LeasedTask]


class MarkRunningRequest(Model):
    lease: LeaseRef


class ExtendLeasesRequest(Model):
    """Extend many leases in one transaction."""

    leases: list[LeaseRef] = Field(max_length=MAX_LEASES)
    lease_ms: DurationMs


LeaseStatus = Literal["extended", "lost", "finished"]


class LeaseExtension(Model):
    """What ExtendLeases did with one lease: each is answered on its own, so one lease that moved on
    never keeps the others from being extended."""

    task_id: str
    status: LeaseStatus
    """``extended``: held until ``expires_ms``; ``lost``: this Nest holds the task no more (its lease
    ran out and the task went back to the queue or to another Nest, or it was cancelled): stop its run
    at once without reporting; ``finished``: the task already ended under this very lease (its
    completion crossed the extension): nothing to do."""
    expires_ms: int | None = None
    detail: str | None = None
    """For a lost lease: where the task is now, for the Nest's log."""


class ExtendLeasesResponse(Model):
    leases: list[LeaseExtension]
    """One answer per lease asked about, in the request's order."""


class CompleteTaskRequest(Model):
    lease: LeaseRef
    status: CompleteStatus
    outcome: dict[str, Any] | None = None
    error: str | None = None


class ReleaseTaskRequest(Model):
    """Give a leased task back to the queue; ``count_attempt`` when its host died mid-task."""

    lease: LeaseRef
    count_attempt: bool = False
    reason: str = Field(min_length=1)


class SuspendTaskRequest(Model):
    """The run suspended: the task gives up its lease and waits for ``wait_for`` (e.g. child:<id>)."""

    lease: LeaseRef
    wait_for: str = Field(min_length=1)


class ReportProgressRequest(Model):
    """The built-in report_progress tool's value for a running task (no fencing: low stakes)."""

    task_id: Id
    progress: dict[str, Any]


class ReportProgressResponse(Model):
    recorded: bool
    """False when the task is unknown or already ended."""


LiveType = Literal["run.delta", "model.started", "model.finished", "tool.started", "tool.finished"]
MAX_LIVE_BATCH = 512
"""Live events per PublishLive call (a Nest sends at most 64 at a time: agen.nest.manager)."""


class LiveEventWire(Model):
    """One live event (agen.domain.live) as it crosses a process boundary: a Nest to its Hub
    (PublishLive), an ``agen host serve`` child to its Manager (its pipe), a Hub to the other Hubs
    on its Postgres store (NOTIFY). One shape, checked the same way at every door."""

    type: LiveType
    namespace: str = Field(pattern=NAME_PATTERN)
    deployment: str = Field(min_length=1, max_length=63)
    run_id: Id
    task_id: Id | None = None
    data: dict[str, Any]
    created_ms: TimeMs

    @classmethod
    def of(cls, e: LiveEvent) -> LiveEventWire:
        return cls.model_construct(
            type=cast("LiveType", e.type),  # the bus carries only LIVE_TYPES
            namespace=e.namespace,
            deployment=e.deployment,
            run_id=e.run_id,
            task_id=e.task_id,
            data=e.data,
            created_ms=e.created_ms,
        )

    def event(self, *, relayed: bool = False) -> LiveEvent:
        return LiveEvent(
            self.type,
            self.namespace,
            self.deployment,
            self.run_id,
            self.task_id,
            self.data,
            self.created_ms,
            relayed=relayed,
        )


class PublishLiveRequest(Model):
    """A batch of live events of runs this Nest runs, for the Hub to publish on its own bus (its
    SSE door, ``agen run`` over HTTP, the TUI, A2A). Best effort and never stored: the record is
    the runs' checkpoints."""

    events: list[LiveEventWire] = Field(max_length=MAX_LIVE_BATCH)


class LiveRefusal(Model):
    """The events of one task the Hub did not publish, and why."""

    task_id: str | None
    events: Count
    reason: str


class PublishLiveResponse(Model):
    published: Count
    refused: list[LiveRefusal] = Field(default_factory=list)
    """Events of tasks this Nest does not run (another Nest holds them, or they are unknown), one
    entry per task: the rest of the batch was published."""


class WaitForWorkRequest(Model):
    """Long-poll: return as soon as tasks may have become leasable since generation ``seen``."""

    seen: Annotated[StrictInt, Field(ge=-1, le=2**63 - 1)] = -1
    wait_seconds: float = Field(0, ge=0, le=60)


class WaitForWorkResponse(Model):
    generation: Count


__all__ = [
    "MAX_LEASES",
    "MAX_LIVE_BATCH",
    "START_FAILED",
    "Assignment",
    "CompleteTaskRequest",
    "ExtendLeasesRequest",
    "ExtendLeasesResponse",
    "GetDefinitionFilesRequest",
    "GetDefinitionFilesResponse",
    "InstanceReport",
    "LeaseRef",
    "LeaseTasksRequest",
    "LeaseTasksResponse",
    "LeasedTask",
    "LiveEventWire",
    "LiveRefusal",
    "MarkRunningRequest",
    "PublishLiveRequest",
    "PublishLiveResponse",
    "RegisterNestRequest",
    "RegisterNestResponse",
    "ReleaseTaskRequest",
    "ReportNestRequest",
    "ReportNestResponse",
    "ReportProgressRequest",
    "ReportProgressResponse",
    "SuspendTaskRequest",
    "WaitForWorkRequest",
    "WaitForWorkResponse",
]


# Enrolment and the fleet of Nests (seed 000 §10): join tokens, EnrolNest, ListNests, RevokeNest.
Labels = dict[
    Annotated[str, Field(min_length=1, max_length=63)], Annotated[str, Field(max_length=200)]
]


class CreateJoinTokenRequest(Model):
    ttl_ms: DurationMs = Field(3_600_000, description="how long the token can be used (once)")
    labels: Labels = Field(
        default_factory=dict, description="labels the enrolled Nest gets (its own --label wins)"
    )
    name: str | None = Field(None, max_length=100)


class CreateJoinTokenResponse(Model):
    token: str
    id: str
    expires_ms: int
    labels: dict[str, str]
    ca_hash: str | None = Field(
        None, description="the Hub CA's hash for `agen nest run --ca-hash` (a Hub with --tls)"
    )


CsrPem = Annotated[str, Field(min_length=1, max_length=8_000)]


class EnrolNestRequest(Model):
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    capacity: Count = 8
    labels: Labels = Field(default_factory=dict)
    csr: CsrPem | None = Field(
        None,
        description="PEM certificate signing request for a key the Nest made itself: a TLS Hub "
        "requires it and signs the Nest's client certificate (its subject is not used: the Hub "
        "names the certificate after the Nest); a Hub without TLS issues none and says so",
    )


class EnrolNestResponse(Model):
    nest_id: str
    token: str = Field(
        description="the Nest's own credential (scope nest); shown once, keep it 0600"
    )
    labels: dict[str, str]
    certificate: str | None = Field(
        None,
        description="a TLS Hub: the Nest's client certificate (PEM), to present beside the "
        "credential on every call; None from a Hub without TLS",
    )
    not_after_ms: int | None = Field(None, description="when the certificate expires")
    ca: str | None = Field(
        None, description="the Hub CA (PEM) that signed it; the Nest checks it against its pin"
    )


class RenewNestCertificateRequest(Model):
    nest_id: Id
    csr: CsrPem = Field(description="PEM certificate signing request for a fresh key")


class RenewNestCertificateResponse(Model):
    certificate: str = Field(
        description="the new client certificate (PEM): the current one keeps working until this "
        "one is first used"
    )
    not_after_ms: int


class NestInfo(Model):
    id: str
    name: str
    labels: dict[str, str]
    capacity: int
    state: str
    instances: int
    last_heartbeat_ms: int
    created_ms: int


class ListNestsRequest(Model):
    pass


class ListNestsResponse(Model):
    nests: list[NestInfo]


class RevokeNestRequest(Model):
    nest: str = Field(min_length=1, max_length=100, description="a Nest's id or name")
